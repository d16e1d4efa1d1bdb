package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// validate checks c: the file's own rules here (keys no option has, routes, a zero where
// the key's doc gives no meaning to one), then the public package's rules on the options
// the file sets, each error naming the key that set the option. The error joins a
// *KeyError per broken rule.
func validate(c *Config) error {
	e := &c.Edge
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &KeyError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	for _, s := range e.TrustedProxies {
		if _, err := parsePrefix(s); err != nil {
			bad("edge.trusted_proxies", "want addresses or CIDR prefixes (10.0.0.0/8), got %q", s)
		}
	}
	for key, addr := range map[string]string{"edge.listen": e.Listen, "edge.admin_listen": e.AdminListen} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			bad(key, "want host:port, got %q", addr)
		}
	}
	// The package takes a zero as "the default"; the file writes its defaults out
	// (defaults.yaml), so a zero here is a mistake, not a request for one. The package
	// checks these too, in its own units: the file's error, in the file's, comes first.
	for key, d := range map[string]time.Duration{
		"edge.render_timeout": e.RenderTimeout, "edge.hard_timeout": e.HardTimeout, "edge.stream_timeout": e.StreamTimeout,
		"edge.read_header_timeout": e.ReadHeaderTimeout, "edge.shutdown_timeout": e.ShutdownTimeout,
	} {
		if d <= 0 {
			bad(key, "must be positive, got %s", d)
		}
	}
	for key, n := range map[string]int{
		"edge.max_page_mb": e.MaxPageMB, "edge.cache_max_mb": e.CacheMaxMB,
		"edge.render_slots": e.RenderSlots, "edge.max_connections": e.MaxConnections,
		"edge.max_connections_per_client": e.MaxConnectionsPerClient,
	} {
		if n < 1 {
			bad(key, "must be at least 1, got %d", n)
		}
	}
	for key, s := range map[string]string{
		"edge.assets_dir": e.AssetsDir, "renderer.grpc_address": c.Renderer.GRPCAddress,
	} {
		if s == "" {
			bad(key, "must be set")
		}
	}
	// Zero means none for these, as in net/http.
	for key, d := range map[string]time.Duration{
		"edge.read_timeout": e.ReadTimeout, "edge.write_timeout": e.WriteTimeout, "edge.idle_timeout": e.IdleTimeout,
	} {
		if d < 0 {
			bad(key, "must not be negative (0 means none), got %s", d)
		}
	}
	if e.MaxHeaderBytes < 4096 {
		bad("edge.max_header_bytes", "must be at least 4096, got %d", e.MaxHeaderBytes)
	}
	if e.OTLPEndpoint != "" && !otlpEndpoint.MatchString(e.OTLPEndpoint) {
		bad("edge.otlp_endpoint", "must be an http:// or https:// URL with a port, e.g. http://otel-collector:4317, got %q", e.OTLPEndpoint)
	}
	if e.TraceSampleRatio < 0 || e.TraceSampleRatio > 1 {
		bad("edge.trace_sample_ratio", "must be in [0, 1], got %v", e.TraceSampleRatio)
	}
	if _, ok := levels[e.LogLevel]; !ok {
		bad("edge.log_level", "want debug, info, warn or error, got %q", e.LogLevel)
	}
	if len(e.Routes) == 0 {
		bad("edge.routes", "at least one route is needed")
	}
	o := c.Options()
	var fromOptions []error
	fromOptions = append(fromOptions, keyErrors(o.Validate(), "")...)
	fromOptions = append(fromOptions, keyErrors(c.ServeOptions().Validate(), "")...)
	mux := http.NewServeMux()
	mux.HandleFunc(NotFoundPattern, http.NotFound)
	for i, p := range c.Pages() {
		key := fmt.Sprintf("edge.routes[%d]", i)
		if !strings.HasPrefix(p.Pattern, "GET ") {
			bad(key+".pattern", `must start with "GET " (pages answer GET and HEAD), got %q`, p.Pattern)
		} else if err := register(mux, p.Pattern); err != nil {
			bad(key+".pattern", "%v", err)
		}
		if p.Name == "" {
			bad(key+".page", "must be set")
		}
		for _, name := range slices.Sorted(maps.Keys(e.Routes[i].PerRequest)) {
			part := e.Routes[i].PerRequest[name]
			if kind, n, ok := strings.Cut(part, ":"); !ok || n == "" || (kind != "header" && kind != "cookie") {
				bad(fmt.Sprintf("%s.per_request[%q]", key, name), "want \"header:Name\" or \"cookie:name\", got %q", part)
			}
		}
		fromOptions = append(fromOptions, keyErrors(p.Options.Validate(o), key+".")...)
	}
	said := map[string]bool{}
	for _, err := range errs {
		said[err.(*KeyError).Key] = true
	}
	for _, err := range fromOptions {
		if ke, ok := err.(*KeyError); !ok || !said[ke.Key] {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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
