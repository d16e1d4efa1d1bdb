package sharedcache

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
)

// A stored document's value, version 1. Decoding one allocates at most a small multiple of
// its length: every count and length is checked against the bytes left before anything is
// allocated (a count of n elements needs at least n bytes).
//
//	version  1 byte, formatVersion
//	flags    1 byte, bit 0 (flagMAC): a MAC follows
//	mac      32 bytes when flagMAC: HMAC-SHA256 over the key the value is stored under
//	         (its length as a uvarint, then the key), version, flags and the entry
//	entry    key, path, etag, server build, bundle strings
//	         status                                uvarint
//	         stored                                varint, Unix nanoseconds
//	         ttl, stale-while-revalidate, -if-error uvarint nanoseconds
//	         tags                                  uvarint count, strings
//	         header                                uvarint count, each a name (string),
//	                                               a uvarint count and the values (strings)
//	         bodies                                uvarint count, each a coding (string)
//	                                               and the body (uvarint length, bytes)
//	         nonce offsets                         uvarint count+1 (0: none; 1: none
//	                                               found), each a uvarint step from the last
//
// A string is its length as a uvarint, then its bytes. Nothing may follow the entry.
const (
	formatVersion = 1
	flagMAC       = 1 << 0
	macSize       = sha256.Size
)

// ErrInvalid is wrapped by the errors of values that are not a valid stored document or
// asset: undecodable, unauthenticated while the store's values must be (Options.HMACKey),
// stored under another key, or naming what the edge never stores. Such a value is a miss.
var ErrInvalid = errors.New("sharedcache: invalid value")

// invalid is an ErrInvalid saying why.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// storedStatuses are the statuses the edge stores: pages, the app's 404, permanent redirects.
var storedStatuses = map[int]bool{
	http.StatusOK: true, http.StatusNotFound: true, http.StatusMovedPermanently: true, http.StatusPermanentRedirect: true,
}

// storedCodings are the codings a stored document is kept in: identity, and the two the
// edge compresses stored documents with (server.storedCodings; zstd is only ever used for
// documents compressed as they are sent, and never stored).
var storedCodings = []string{"", "br", "gzip"}

// Codings are the content codings a stored document may be kept in, identity ("") included.
// The edge's own list is checked against it (a coding missing here would be refused by
// Set and missed by Get).
func Codings() []string { return slices.Clone(storedCodings) }

// encode appends e's value, authenticated for storeKey when macKey is set, to dst.
func encode(dst []byte, storeKey string, e *htmlcache.Entry, macKey []byte) []byte {
	start := len(dst)
	flags := byte(0)
	if macKey != nil {
		flags |= flagMAC
	}
	dst = append(dst, formatVersion, flags)
	if macKey != nil {
		dst = append(dst, make([]byte, macSize)...)
	}
	body := len(dst)
	dst = appendString(dst, e.Key)
	dst = appendString(dst, e.Path)
	dst = appendString(dst, e.ETag)
	dst = appendString(dst, e.ServerBuild)
	dst = appendString(dst, e.Bundle)
	dst = binary.AppendUvarint(dst, uint64(e.Status))
	dst = binary.AppendVarint(dst, e.Stored.UnixNano())
	for _, d := range []time.Duration{e.TTL, e.StaleWhileRevalidate, e.StaleIfError} {
		dst = binary.AppendUvarint(dst, uint64(d))
	}
	dst = binary.AppendUvarint(dst, uint64(len(e.Tags)))
	for _, tag := range e.Tags {
		dst = appendString(dst, tag)
	}
	names := slices.Sorted(maps.Keys(e.Header))
	dst = binary.AppendUvarint(dst, uint64(len(names)))
	for _, name := range names {
		dst = appendString(dst, name)
		dst = binary.AppendUvarint(dst, uint64(len(e.Header[name])))
		for _, v := range e.Header[name] {
			dst = appendString(dst, v)
		}
	}
	codings := slices.Sorted(maps.Keys(e.Bodies))
	dst = binary.AppendUvarint(dst, uint64(len(codings)))
	for _, coding := range codings {
		dst = appendString(dst, coding)
		dst = binary.AppendUvarint(dst, uint64(len(e.Bodies[coding])))
		dst = append(dst, e.Bodies[coding]...)
	}
	if e.NonceAt == nil {
		dst = append(dst, 0)
	} else {
		dst = binary.AppendUvarint(dst, uint64(len(e.NonceAt))+1)
		last := 0
		for _, at := range e.NonceAt {
			dst = binary.AppendUvarint(dst, uint64(at-last))
			last = at
		}
	}
	// Last and optional: a value without it is a whole document.
	if r := e.Resume; r != nil {
		dst = appendString(dst, r.Page)
		dst = binary.AppendUvarint(dst, uint64(len(r.Props)))
		dst = append(dst, r.Props...)
		dst = binary.AppendUvarint(dst, uint64(len(r.Postponed)))
		dst = append(dst, r.Postponed...)
	}
	if macKey != nil {
		sum := signature(macKey, storeKey, dst[start:start+2], dst[body:])
		copy(dst[start+2:body], sum)
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

// signature is the MAC of a value stored under storeKey: its head (version and flags) and
// its entry.
func signature(macKey []byte, storeKey string, head, entry []byte) []byte {
	mac := hmac.New(sha256.New, macKey)
	mac.Write(binary.AppendUvarint(nil, uint64(len(storeKey))))
	mac.Write([]byte(storeKey))
	mac.Write(head)
	mac.Write(entry)
	return mac.Sum(nil)
}

// decode reads the document stored under storeKey for key, and checks it (check). With
// macKey set, a value must carry a valid MAC; without, a MAC is not checked. The entry's
// bodies are slices of b, which the caller must not change.
func decode(b []byte, storeKey, key string, macKey []byte) (*htmlcache.Entry, error) {
	if len(b) < 2 {
		return nil, invalid("%d bytes, shorter than any value", len(b))
	}
	if b[0] != formatVersion {
		return nil, invalid("format version %d, want %d", b[0], formatVersion)
	}
	flags, rest := b[1], b[2:]
	if flags&^flagMAC != 0 {
		return nil, invalid("unknown flags %#x", flags)
	}
	if flags&flagMAC != 0 {
		if len(rest) < macSize {
			return nil, invalid("truncated MAC")
		}
		sum, entry := rest[:macSize], rest[macSize:]
		if macKey != nil && !hmac.Equal(sum, signature(macKey, storeKey, b[:2], entry)) {
			return nil, invalid("the MAC does not match (another key, or a value not written by an edge with this store's key)")
		}
		rest = entry
	} else if macKey != nil {
		return nil, invalid("no MAC, and the store's values must carry one (edge.shared_cache_key)")
	}
	r := reader{b: rest}
	e := &htmlcache.Entry{Key: r.string(), Path: r.string(), ETag: r.string(), ServerBuild: r.string(), Bundle: r.string()}
	e.Status = int(r.uint(999))
	e.Stored = time.Unix(0, r.int())
	e.TTL = time.Duration(r.uint(math.MaxInt64))
	e.StaleWhileRevalidate = time.Duration(r.uint(math.MaxInt64))
	e.StaleIfError = time.Duration(r.uint(math.MaxInt64))
	if n := r.count(1); n > 0 {
		e.Tags = make([]string, 0, n)
		for i := 0; i < n && r.err == nil; i++ {
			e.Tags = append(e.Tags, r.string())
		}
	}
	if n := r.count(2); n > 0 {
		e.Header = make(http.Header, min(n, 64))
		for i := 0; i < n && r.err == nil; i++ {
			name := r.string()
			values := make([]string, 0, r.count(1))
			for j := 0; j < cap(values) && r.err == nil; j++ {
				values = append(values, r.string())
			}
			if _, twice := e.Header[name]; twice && r.err == nil {
				r.err = invalid("header %q twice", name)
			}
			e.Header[name] = values
		}
	}
	if n := r.count(2); n > 0 {
		if n > len(storedCodings) {
			return nil, invalid("%d bodies, more than the %d codings a document is stored in", n, len(storedCodings))
		}
		e.Bodies = make(map[string][]byte, n)
		for i := 0; i < n && r.err == nil; i++ {
			coding := r.string()
			if _, twice := e.Bodies[coding]; twice && r.err == nil {
				r.err = invalid("coding %q twice", coding)
			}
			e.Bodies[coding] = r.bytes()
		}
	}
	if n := r.uint(math.MaxInt32); n > 0 { // the count plus one: 0 is none
		if n-1 > uint64(len(r.b)) {
			r.fail("%d nonce offsets, and %d bytes left", n-1, len(r.b))
			n = 1
		}
		e.NonceAt = make([]int, 0, n-1)
		last := uint64(0)
		for i := uint64(0); i < n-1 && r.err == nil; i++ {
			// An offset past the body is refused by check; here it only has to fit an int.
			last += r.uint(math.MaxInt32)
			if last > math.MaxInt32 && r.err == nil {
				r.err = invalid("nonce offset past 2^31")
			}
			e.NonceAt = append(e.NonceAt, int(last))
		}
	}
	if len(r.b) > 0 && r.err == nil {
		e.Resume = &htmlcache.Resume{Page: r.string(), Props: r.bytes(), Postponed: r.bytes()}
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) > 0 {
		return nil, invalid("%d bytes after the entry", len(r.b))
	}
	if err := check(e, key); err != nil {
		return nil, err
	}
	return e, nil
}

// reader reads a value's fields; its first error sticks, and every read after it returns
// a zero value.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = invalid(format, args...)
	}
}

// uint reads an unsigned number no greater than max.
func (r *reader) uint(max uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("truncated or overlong number")
		return 0
	}
	r.b = r.b[n:]
	if v > max {
		r.fail("number %d over %d", v, max)
		return 0
	}
	return v
}

func (r *reader) int() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("truncated or overlong number")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads how many elements follow, each at least size bytes long: a count the bytes
// left cannot hold fails before anything is allocated for it.
func (r *reader) count(size int) int {
	n := r.uint(math.MaxInt32)
	if n > uint64(len(r.b)/size) {
		r.fail("a count of %d, and %d bytes left", n, len(r.b))
		return 0
	}
	return int(n)
}

// bytes reads a length and that many bytes: a slice of the value, with no spare capacity
// (the HTML cache counts a body's capacity).
func (r *reader) bytes() []byte {
	n := r.uint(math.MaxInt32)
	if n > uint64(len(r.b)) {
		r.fail("a length of %d, and %d bytes left", n, len(r.b))
		return nil
	}
	b := r.b[:n:n]
	r.b = r.b[n:]
	return b
}

func (r *reader) string() string { return string(r.bytes()) }

// check says whether e is a document the edge could have stored under key: its own key,
// a status it stores, known codings with the identity body every page has, nonce offsets
// within that body in order, valid header fields, and nothing private (a stored document
// goes to every client). Which headers the edge sets itself is the server's to check.
func check(e *htmlcache.Entry, key string) error {
	if e.Key != key {
		return invalid("stored for key %q, read for %q", e.Key, key)
	}
	if !storedStatuses[e.Status] {
		return invalid("status %d, which the edge does not store", e.Status)
	}
	if e.TTL < 0 || e.StaleWhileRevalidate < 0 || e.StaleIfError < 0 {
		return invalid("a negative lifetime")
	}
	for coding := range e.Bodies {
		if !slices.Contains(storedCodings, coding) {
			return invalid("unknown coding %q", coding)
		}
	}
	redirect := e.Status >= 300 && e.Status < 400
	identity, ok := e.Bodies[""]
	switch {
	case redirect && len(e.Bodies) > 0:
		return invalid("a redirect with a body")
	case !redirect && !ok:
		return invalid("no identity body")
	case !validValue(e.ETag):
		return invalid("ETag %q", e.ETag)
	}
	if r := e.Resume; r != nil && (len(r.Postponed) == 0 || len(e.Bodies) != 1 || redirect) {
		return invalid("a prelude without postponed state, or kept in codings other than identity")
	}
	if e.NonceAt != nil {
		if len(e.Bodies) != 1 {
			return invalid("nonce offsets with a body in a coding other than identity")
		}
		last := -1
		for _, at := range e.NonceAt {
			if at <= last || at > len(identity) {
				return invalid("nonce offset %d after %d, in a %d-byte body", at, last, len(identity))
			}
			last = at
		}
	}
	for name, values := range e.Header {
		if !validToken(name) || http.CanonicalHeaderKey(name) != name {
			return invalid("header name %q", name)
		}
		for _, v := range values {
			if !validValue(v) {
				return invalid("header %s: value %q", name, v)
			}
		}
		switch name {
		case "Set-Cookie":
			return invalid("Set-Cookie: a stored document is never private")
		case "Cache-Control":
			for _, v := range values {
				if v := strings.ToLower(v); strings.Contains(v, "private") || strings.Contains(v, "no-store") {
					return invalid("Cache-Control %q: a stored document is never private", v)
				}
			}
		}
	}
	return nil
}

// validToken: a header name is a token (RFC 9110 §5.6.2).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// validValue: a header value has no control character but tab (RFC 9110 §5.5), and so
// cannot end the header line.
func validValue(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// Encode is the value Set writes for e under storeKey (authenticated when hmacKey is set),
// with no check: for tests and tools that write the store directly, as a writer other than
// an edge could.
func Encode(storeKey string, e *htmlcache.Entry, hmacKey []byte) []byte {
	return encode(nil, storeKey, e, hmacKey)
}
