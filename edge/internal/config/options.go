package config

import (
	"cmp"
	"errors"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

// The file's keys become the public package's options here, in one direction: each key
// is read once, into the option it sets (optionKeys names which, for errors), and the
// package validates the options. What a zero option means to the package (its default),
// the file says by leaving the key out: its defaults are written in defaults.yaml, so a
// zero written in the file means what the key's doc says, never "the default".

// Options are the public package's options the file sets. Logger, Registerer and
// TracerProvider are the binary's to add, from log_level, its registry and otlp_endpoint.
func (c *Config) Options() ssr.Options {
	e := &c.Edge
	return ssr.Options{
		RendererAddress:    c.Renderer.GRPCAddress,
		AssetsDir:          e.AssetsDir,
		Timeouts:           ssr.Timeouts{Render: e.RenderTimeout, Hard: e.HardTimeout, Stream: e.StreamTimeout},
		MaxPageBytes:       e.MaxPageMB << 20,
		RenderSlots:        e.RenderSlots,
		EarlyHints:         e.EarlyHints,
		AdminToken:         e.AdminToken,
		CacheMaxBytes:      e.CacheMaxMB << 20,
		SharedCacheAddress: e.SharedCacheAddress,
		SharedCacheKey:     orNil([]byte(e.SharedCacheKey)),
	}
}

// ServeOptions are ListenAndServe's options the file sets.
func (c *Config) ServeOptions() ssr.ServeOptions {
	e := &c.Edge
	return ssr.ServeOptions{
		AdminAddr:               e.AdminListen,
		MaxConnections:          e.MaxConnections,
		MaxConnectionsPerClient: e.MaxConnectionsPerClient,
		TrustedProxies:          prefixes(e.TrustedProxies),
		ShutdownDelay:           e.ShutdownDelay,
		ShutdownTimeout:         e.ShutdownTimeout,
	}
}

// prefixes parses addresses and CIDR prefixes (Validate checked them): nil for none.
func prefixes(list []string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range list {
		if p, err := parsePrefix(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// parsePrefix is s as a CIDR prefix, an address being its own /32 or /128.
func parsePrefix(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	return p.Masked(), err
}

// PublicServer is the public server the file describes, without its Handler.
func (c *Config) PublicServer() *http.Server {
	e := &c.Edge
	return &http.Server{
		Addr:              e.Listen,
		ReadHeaderTimeout: e.ReadHeaderTimeout,
		ReadTimeout:       zeroIsNone(e.ReadTimeout),
		WriteTimeout:      zeroIsNone(e.WriteTimeout),
		IdleTimeout:       zeroIsNone(e.IdleTimeout),
		MaxHeaderBytes:    e.MaxHeaderBytes,
	}
}

// A Page is a route of the file: a page of the app mounted at a pattern.
type Page struct {
	Pattern string
	Name    string
	Options ssr.PageOptions
}

// Pages are the file's routes, in order.
func (c *Config) Pages() []Page {
	pages := make([]Page, len(c.Edge.Routes))
	for i, r := range c.Edge.Routes {
		pages[i] = Page{Pattern: r.Pattern, Name: r.Page, Options: ssr.PageOptions{
			Route:      r.Pattern,
			Timeouts:   ssr.Timeouts{Render: r.RenderTimeout, Hard: r.HardTimeout, Stream: r.StreamTimeout},
			Variants:   r.Variants,
			Stream:     r.Stream,
			PerRequest: requestParts(r.PerRequest),
			Cache: ssr.CachePolicy{
				TTL: r.Cache.TTL, StaleWhileRevalidate: r.Cache.StaleWhileRevalidate, StaleIfError: r.Cache.StaleIfError,
				Query: r.Cache.Query, PersonalizeCookies: r.Cache.PersonalizeCookies,
			},
		}}
	}
	return pages
}

// requestParts are the route's per_request values, each read from its request part; nil
// for a route without any. A part that is not "cookie:name" or "header:Name" is validate's
// to name.
func requestParts(parts map[string]string) map[string]ssr.RequestValue {
	if len(parts) == 0 {
		return nil
	}
	values := make(map[string]ssr.RequestValue, len(parts))
	for name, part := range parts {
		kind, key, _ := strings.Cut(part, ":")
		values[name] = func(r *http.Request) (any, error) {
			switch kind {
			case "cookie":
				if c, err := r.Cookie(key); err == nil {
					return c.Value, nil
				}
			case "header":
				if vs := r.Header.Values(key); len(vs) > 0 {
					return vs[0], nil
				}
			}
			return nil, nil
		}
	}
	return values
}

// optionKeys names the key that sets each option, for the package's errors: a file's
// reader knows its keys. Route keys are relative to their route ("edge.routes[2].").
var optionKeys = map[string]string{
	"Options.RendererAddress":                "renderer.grpc_address",
	"Options.AssetsDir":                      "edge.assets_dir",
	"Options.Timeouts.Render":                "edge.render_timeout",
	"Options.Timeouts.Hard":                  "edge.hard_timeout",
	"Options.Timeouts.Stream":                "edge.stream_timeout",
	"Options.MaxPageBytes":                   "edge.max_page_mb",
	"Options.RenderSlots":                    "edge.render_slots",
	"Options.EarlyHints":                     "edge.early_hints",
	"Options.CacheMaxBytes":                  "edge.cache_max_mb",
	"Options.SharedCacheAddress":             "edge.shared_cache_address",
	"Options.SharedCacheKey":                 "edge.shared_cache_key",
	"ServeOptions.AdminAddr":                 "edge.admin_listen",
	"Options.AdminToken":                     "edge.admin_token",
	"ServeOptions.MaxConnections":            "edge.max_connections",
	"ServeOptions.MaxConnectionsPerClient":   "edge.max_connections_per_client",
	"ServeOptions.TrustedProxies":            "edge.trusted_proxies",
	"ServeOptions.ShutdownDelay":             "edge.shutdown_delay",
	"ServeOptions.ShutdownTimeout":           "edge.shutdown_timeout",
	"http.Server.Addr":                       "edge.listen",
	"http.Server.ReadHeaderTimeout":          "edge.read_header_timeout",
	"http.Server.ReadTimeout":                "edge.read_timeout",
	"http.Server.WriteTimeout":               "edge.write_timeout",
	"http.Server.IdleTimeout":                "edge.idle_timeout",
	"http.Server.MaxHeaderBytes":             "edge.max_header_bytes",
	"PageOptions.Route":                      "pattern",
	"PageOptions.Timeouts.Render":            "render_timeout",
	"PageOptions.Timeouts.Hard":              "hard_timeout",
	"PageOptions.Timeouts.Stream":            "stream_timeout",
	"PageOptions.Variants":                   "variants",
	"PageOptions.Stream":                     "stream",
	"PageOptions.PerRequest":                 "per_request",
	"PageOptions.Cache.TTL":                  "cache.ttl",
	"PageOptions.Cache.StaleWhileRevalidate": "cache.stale_while_revalidate",
	"PageOptions.Cache.StaleIfError":         "cache.stale_if_error",
	"PageOptions.Cache.Query":                "cache.query",
	"PageOptions.Cache.PersonalizeCookies":   "cache.personalize_cookies",
}

// keyOf names field (an option's path, an index allowed: "PageOptions.Variants[1]") by its
// key; route keys get prefix, "edge.routes[2].".
func keyOf(field, prefix string) string {
	path, index, _ := strings.Cut(field, "[")
	key, ok := optionKeys[path]
	if !ok {
		return field // an option no key sets: the file cannot have broken it, but say it
	}
	if index != "" {
		key += "[" + index
	}
	if strings.HasPrefix(path, "PageOptions.") {
		key = prefix + key
	}
	return key
}

// keyErrors is err, the package's, with each *ssr.OptionError made the *KeyError of the
// key that set its option.
func keyErrors(err error, prefix string) []error {
	if err == nil {
		return nil
	}
	var errs []error
	for _, e := range unjoin(err) {
		oe, ok := e.(*ssr.OptionError)
		if !ok {
			errs = append(errs, e)
			continue
		}
		errs = append(errs, &KeyError{Key: keyOf(oe.Field, prefix), Msg: byKeys(strings.TrimPrefix(oe.Error(), "ssr: "+oe.Field+" "), prefix)})
	}
	return errs
}

// optionPaths are optionKeys' options, longest first: a path that another extends
// (Options.Timeouts.Stream, PageOptions.Timeouts.Stream) is replaced after it.
var optionPaths = func() []string {
	paths := slices.Collect(maps.Keys(optionKeys))
	slices.SortFunc(paths, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	return paths
}()

// byKeys is msg, the package's words about an option, with each other option it names given
// by the key that sets it: the file's reader knows its keys.
func byKeys(msg, prefix string) string {
	var pairs []string
	for _, path := range optionPaths {
		if strings.Contains(msg, path) {
			pairs = append(pairs, path, keyOf(path, prefix))
		}
	}
	return strings.NewReplacer(pairs...).Replace(msg)
}

// Explain is err, an error of the public package's (New, ListenAndServe), with the
// options it names given by the keys that set them.
func Explain(err error) error {
	if errs := keyErrors(err, "edge.routes[]."); len(errs) > 0 {
		return errors.Join(errs...)
	}
	return err
}

// unjoin is the errors errors.Join joined into err, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// zeroIsNone is a value of the file's, where zero means none, as the package takes it,
// where zero means its default and a negative value none.
func zeroIsNone(v time.Duration) time.Duration {
	if v == 0 {
		return -1
	}
	return v
}

// orNil is b, or nil when it is empty: the package's "no key".
func orNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}
