package ssr

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/server"
)

// An OptionError is one broken rule of one option: New's, Page's and ListenAndServe's
// errors join one per rule.
type OptionError struct {
	// Field is the option's path: "Options.CacheMaxBytes",
	// "PageOptions.Timeouts.Stream", "ServeOptions.AdminAddr", "http.Server.Addr" (the public
	// server's, given to ListenAndServe).
	Field string
	// says is what is wrong, naming each option it mentions by name(field).
	says func(name func(field string) string) string
	// err is the cause, when the value failed in use (an address that cannot be listened on).
	err error
}

func (e *OptionError) Error() string { return "ssr: " + e.Field + " " + e.says(asField) }

// Unwrap is the cause of a value that failed in use (errors.Is(err, syscall.EADDRINUSE)),
// nil for a broken rule.
func (e *OptionError) Unwrap() error { return e.err }

func asField(field string) string { return field }

// rules gathers the broken rules of one set of options.
type rules []error

// broken adds a rule of field broken: format's %[n]s verbs for fields named are the
// options' names (name), its other verbs args.
func (rs *rules) broken(field, format string, args ...any) {
	*rs = append(*rs, &OptionError{Field: field, says: func(name func(string) string) string {
		named := make([]any, len(args))
		for i, a := range args {
			if f, ok := a.(fieldName); ok {
				a = name(string(f))
			}
			named[i] = a
		}
		return fmt.Sprintf(format, named...)
	}})
}

// fieldName is an argument of rules.broken that names another option.
type fieldName string

func (rs rules) err() error { return errors.Join(rs...) }

// Validate returns the error New would return for o's values, nil if they are valid: for
// options read from a file, before anything is opened.
func (o Options) Validate() error {
	o = o.withDefaults()
	var rs rules
	for field, n := range map[string]int{
		"Options.MaxPageBytes": o.MaxPageBytes,
		"Options.RenderSlots":  o.RenderSlots, "Options.CacheMaxBytes": o.CacheMaxBytes,
	} {
		if n < 0 {
			rs.broken(field, "must not be negative, got %d", n)
		}
	}
	for field, d := range map[string]time.Duration{
		"Options.Timeouts.Render": o.Timeouts.Render, "Options.Timeouts.Hard": o.Timeouts.Hard,
		"Options.Timeouts.Stream": o.Timeouts.Stream,
	} {
		if d < 0 {
			rs.broken(field, "must not be negative, got %s", d)
		}
	}
	if o.Timeouts.Render > o.Timeouts.Hard {
		rs.broken("Options.Timeouts.Render", "%s is above %s %s: a request must not wait longer than its render may last",
			o.Timeouts.Render, fieldName("Options.Timeouts.Hard"), o.Timeouts.Hard)
	}
	if n := len(o.SharedCacheKey); n > 0 && n < 32 {
		rs.broken("Options.SharedCacheKey", "must be at least 32 bytes, got %d (the key itself is not shown)", n)
	}
	return rs.err()
}

// Validate returns the error Page would refuse p with on a Server of site, nil if p is
// valid: for pages read from a file, whose mistakes are the file's, not the program's.
func (p PageOptions) Validate(site Options) error {
	var rs rules
	for _, w := range []struct {
		field string
		d     time.Duration
	}{
		{"PageOptions.Timeouts.Render", p.Timeouts.Render}, {"PageOptions.Timeouts.Hard", p.Timeouts.Hard},
		{"PageOptions.Timeouts.Stream", p.Timeouts.Stream}, {"PageOptions.Cache.TTL", p.Cache.TTL},
		{"PageOptions.Cache.StaleWhileRevalidate", p.Cache.StaleWhileRevalidate},
		{"PageOptions.Cache.StaleIfError", p.Cache.StaleIfError},
	} {
		if w.d < 0 {
			rs.broken(w.field, "must not be negative, got %s", w.d)
		}
	}
	t := p.Timeouts.over(site.withDefaults().Timeouts)
	if t.Render > t.Hard {
		rs.broken("PageOptions.Timeouts.Render", "%s is above the page's hard timeout (%s) %s: a request must not wait longer than its render may last",
			t.Render, fieldName("PageOptions.Timeouts.Hard"), t.Hard)
	}
	if (p.Stream || p.PerRequest != nil) && (t.Stream < t.Render || t.Stream > t.Hard) {
		rs.broken("PageOptions.Timeouts.Stream", "%s must lie between the page's render timeout (%s) %s and its hard timeout (%s) %s: "+
			"the shell is awaited for the first, the boundaries for this one, and the render that fills the cache for the last",
			t.Stream, fieldName("PageOptions.Timeouts.Render"), t.Render, fieldName("PageOptions.Timeouts.Hard"), t.Hard)
	}
	if p.Cache.TTL > 0 && p.Cache.Query == nil {
		rs.broken("PageOptions.Cache.Query", "must list the query parameters the page reads ([] for none): the page is cached, "+
			"and any other parameter, ?u=1, ?u=2..., would make a key and a render of its own")
	}
	if p.PerRequest != nil && p.Cache.TTL <= 0 {
		rs.broken("PageOptions.PerRequest", "needs a cached page (%s above zero): a partially prerendered page's shell is stored, its values per request are not",
			fieldName("PageOptions.Cache.TTL"))
	}
	for _, name := range slices.Sorted(maps.Keys(p.PerRequest)) {
		if err := server.CheckValueName(name); err != nil {
			rs.broken(fmt.Sprintf("PageOptions.PerRequest[%q]", name), "%v", err)
		} else if p.PerRequest[name] == nil {
			rs.broken(fmt.Sprintf("PageOptions.PerRequest[%q]", name), "has no function")
		}
	}
	for i, v := range p.Variants {
		if kind, name, ok := strings.Cut(v, ":"); !ok || name == "" || (kind != "header" && kind != "cookie") {
			rs.broken(fmt.Sprintf("PageOptions.Variants[%d]", i), "want \"header:Name\" or \"cookie:name\", got %q", v)
		}
	}
	return rs.err()
}
