package config

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// Validate checks c against every rule the edge relies on: it then builds its servers,
// cache and pages from c without checking again. Load calls it on the file's configuration,
// the public package on its Options overlaid on the defaults. The error joins a *KeyError
// per broken rule.
func Validate(c *Config) error {
	e := &c.Edge
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &KeyError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	for key, addr := range map[string]string{"edge.listen": e.Listen, "edge.admin_listen": e.AdminListen} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			bad(key, "want host:port, got %q", addr)
		}
	}
	for key, d := range map[string]time.Duration{
		"edge.render_timeout": e.RenderTimeout, "edge.hard_timeout": e.HardTimeout,
		"edge.read_header_timeout": e.ReadHeaderTimeout, "edge.shutdown_timeout": e.ShutdownTimeout,
	} {
		if d <= 0 {
			bad(key, "must be positive, got %s", d)
		}
	}
	for key, d := range map[string]time.Duration{
		"edge.read_timeout": e.ReadTimeout, "edge.write_timeout": e.WriteTimeout, "edge.idle_timeout": e.IdleTimeout,
		"edge.shutdown_delay": e.ShutdownDelay,
	} {
		if d < 0 {
			bad(key, "must not be negative (0 means none), got %s", d)
		}
	}
	if e.MaxPageMB < 1 {
		bad("edge.max_page_mb", "must be at least 1, got %d", e.MaxPageMB)
	}
	if e.MaxPropsMB < 1 {
		bad("edge.max_props_mb", "must be at least 1, got %d", e.MaxPropsMB)
	}
	if e.CacheMaxMB < 1 {
		bad("edge.cache_max_mb", "must be at least 1, got %d", e.CacheMaxMB)
	}
	if e.CacheMaxEntryMB < 1 || e.CacheMaxEntryMB > e.CacheMaxMB {
		bad("edge.cache_max_entry_mb", "must be between 1 and edge.cache_max_mb (%d), got %d", e.CacheMaxMB, e.CacheMaxEntryMB)
	}
	if e.CacheNotFoundTTL < 0 {
		bad("edge.cache_not_found_ttl", "must not be negative, got %s", e.CacheNotFoundTTL)
	}
	if e.CachePassTTL <= 0 {
		bad("edge.cache_pass_ttl", "must be positive, got %s", e.CachePassTTL)
	}
	if e.CacheTTLJitter < 0 || e.CacheTTLJitter >= 1 {
		bad("edge.cache_ttl_jitter", "must be in [0, 1), got %v", e.CacheTTLJitter)
	}
	if e.OTLPEndpoint != "" && !otlpEndpoint.MatchString(e.OTLPEndpoint) {
		bad("edge.otlp_endpoint", "must be an http:// or https:// URL with a port, e.g. http://otel-collector:4317, got %q", e.OTLPEndpoint)
	}
	if e.TraceSampleRatio < 0 || e.TraceSampleRatio > 1 {
		bad("edge.trace_sample_ratio", "must be in [0, 1], got %v", e.TraceSampleRatio)
	}
	if e.SharedCacheTimeout <= 0 {
		bad("edge.shared_cache_timeout", "must be positive, got %s", e.SharedCacheTimeout)
	}
	if n := len(e.SharedCacheKey); n > 0 && n < 32 {
		bad("edge.shared_cache_key", "must be at least 32 bytes, got %d (the key itself is not shown)", n)
	}
	if e.StreamTimeout <= 0 {
		bad("edge.stream_timeout", "must be positive, got %s", e.StreamTimeout)
	}
	if _, err := regexp.Compile(e.CrawlerUserAgent); err != nil {
		bad("edge.crawler_user_agent", "not a regular expression: %v", err)
	}
	if e.MaxRendersInFlight < 1 {
		bad("edge.max_renders_in_flight", "must be at least 1, got %d", e.MaxRendersInFlight)
	}
	if e.MaxConnections < 1 {
		bad("edge.max_connections", "must be at least 1, got %d", e.MaxConnections)
	}
	if e.MaxHeaderBytes < 4096 {
		bad("edge.max_header_bytes", "must be at least 4096, got %d", e.MaxHeaderBytes)
	}
	if e.AssetsDir == "" {
		bad("edge.assets_dir", "must be set")
	}
	if e.NotFoundPage == "" {
		bad("edge.not_found_page", "must be set")
	}
	if _, ok := levels[e.LogLevel]; !ok {
		bad("edge.log_level", "want debug, info, warn or error, got %q", e.LogLevel)
	}
	if c.Renderer.GRPCAddress == "" {
		bad("renderer.grpc_address", "must be set")
	}
	mux := http.NewServeMux()
	mux.HandleFunc(NotFoundPattern, http.NotFound)
	for i, r := range e.Routes {
		key := fmt.Sprintf("edge.routes[%d]", i)
		if !strings.HasPrefix(r.Pattern, "GET ") {
			bad(key+".pattern", `must start with "GET " (pages answer GET and HEAD), got %q`, r.Pattern)
			continue
		}
		if err := register(mux, r.Pattern); err != nil {
			bad(key+".pattern", "%v", err)
		}
		for _, p := range routeProblems(r, *e) {
			bad(key+p.key, "%s", p.msg)
		}
	}
	if e.RenderTimeout > e.HardTimeout {
		bad("edge.render_timeout", "%s is above edge.hard_timeout %s: the soft deadline must not outlast the render", e.RenderTimeout, e.HardTimeout)
	}
	return errors.Join(errs...)
}

// ValidateRoute checks what a route needs besides its pattern: a page, deadlines in order,
// windows that are not negative, variants that name a header or a cookie. Its errors name
// the route's keys ("variants[0]: ...").
func ValidateRoute(r Route, e Edge) error {
	var errs []error
	for _, p := range routeProblems(r, e) {
		msg := p.msg
		if p.key != "" {
			msg = strings.TrimPrefix(p.key, ".") + ": " + msg
		}
		errs = append(errs, errors.New(msg))
	}
	return errors.Join(errs...)
}

// A routeProblem is a broken rule of a route: key is the route's key (".page"), or empty
// for the route as a whole.
type routeProblem struct{ key, msg string }

// routeProblems are the broken rules ValidateRoute reports.
func routeProblems(r Route, e Edge) []routeProblem {
	var ps []routeProblem
	if r.Page == "" {
		ps = append(ps, routeProblem{".page", "must be set"})
	}
	soft, hard := r.EffectiveTimeouts(e)
	if soft > hard {
		ps = append(ps, routeProblem{"", fmt.Sprintf("render_timeout %s is above hard_timeout %s: the soft deadline must not outlast the render", soft, hard)})
	}
	if r.Stream {
		if st := r.EffectiveStreamTimeout(e); st < soft || st > hard {
			ps = append(ps, routeProblem{".stream_timeout", fmt.Sprintf("%s must lie between render_timeout %s and hard_timeout %s: "+
				"the shell is awaited for render_timeout, the boundaries for stream_timeout, and the render that fills the cache for hard_timeout", st, soft, hard)})
		}
	}
	for _, w := range []struct {
		name string
		d    time.Duration
	}{{"ttl", r.Cache.TTL}, {"stale_while_revalidate", r.Cache.StaleWhileRevalidate}, {"stale_if_error", r.Cache.StaleIfError}} {
		if w.d < 0 {
			ps = append(ps, routeProblem{".cache." + w.name, fmt.Sprintf("must not be negative, got %s", w.d)})
		}
	}
	if r.Cache.TTL > 0 && r.Cache.Query == nil {
		ps = append(ps, routeProblem{".cache.query", "must list the query parameters the page reads ([] for none): the route is cached, " +
			"and any other parameter, ?u=1, ?u=2..., would make a key and a render of its own"})
	}
	for j, v := range r.Variants {
		if kind, name, ok := strings.Cut(v, ":"); !ok || name == "" || (kind != "header" && kind != "cookie") {
			ps = append(ps, routeProblem{fmt.Sprintf(".variants[%d]", j), fmt.Sprintf("want \"header:Name\" or \"cookie:name\", got %q", v)})
		}
	}
	return ps
}

// register turns ServeMux's panic on an invalid or conflicting pattern into an error.
func register(mux *http.ServeMux, pattern string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	mux.HandleFunc(pattern, http.NotFound)
	return nil
}
