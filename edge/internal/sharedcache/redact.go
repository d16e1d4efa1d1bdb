package sharedcache

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Redact returns address as it may be logged: its password, if any, replaced by "xxxxx".
// An address that is not a URL of the usual shape is redacted up to its last "@", where a
// password would end.
func Redact(address string) string {
	u, err := url.Parse(address)
	if err == nil && (u.User != nil || !strings.Contains(address, "@")) {
		return u.Redacted()
	}
	if at := strings.LastIndex(address, "@"); at >= 0 {
		scheme, _, ok := strings.Cut(address, "://")
		if !ok || len(scheme) > at {
			scheme = ""
		} else {
			scheme += "://"
		}
		return scheme + "xxxxx" + address[at:]
	}
	return address
}

// addressError is New's error for an address go-redis refused, with no part of its password:
// url.Parse's errors hold the whole URL, and parts of it (an unescaped "/" in a password
// makes the rest of it a path).
func addressError(address string, err error) error {
	shown := Redact(address)
	if u, perr := url.Parse(address); strings.Contains(address, "@") && (perr != nil || u.User == nil) {
		// Where the password ends is not known: say nothing of the rest.
		err = errors.New("not a valid URL (redis://[user:password@]host:port/db, rediss://..., unix://[user:password@]/path; percent-encode a password's reserved characters)")
	} else if perr != nil {
		var uerr *url.Error
		if errors.As(perr, &uerr) {
			err = uerr.Err
		}
	}
	return fmt.Errorf("sharedcache: address %s: %s", shown, redactURLs(err.Error()))
}

// withPassword matches the user information of a URL written in a message: scheme://user:password@.
var withPassword = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*:)[^\s@]*@`)

// redactURLs replaces the password of every URL in msg by "xxxxx".
func redactURLs(msg string) string {
	return withPassword.ReplaceAllString(msg, "${1}xxxxx@")
}
