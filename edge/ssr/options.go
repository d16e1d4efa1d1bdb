package ssr

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
	"go.opentelemetry.io/otel/trace"
)

// Options configure a Server. Zero values mean the defaults given, which are the edge
// binary's (edge/internal/config/defaults.yaml).
type Options struct {
	// Renderer is the renderer's gRPC address. If empty, "unix:///tmp/sidecar-ssr/renderer.sock".
	Renderer string
	// AssetsDir is the client build: manifest.json and assets/. If empty, "app/dist/client".
	AssetsDir string
	// RenderTimeout is how long a request waits for its page (the loader and the render):
	// past it, it gets the stale copy or the client-side-render document. If zero, 150ms.
	RenderTimeout time.Duration
	// HardTimeout bounds the loader and the render, which go on after RenderTimeout to fill
	// the cache. If zero, 2s.
	HardTimeout time.Duration
	// MaxPageMB bounds a rendered page. If zero, 16.
	MaxPageMB int
	// MaxPropsMB bounds the props a loader returns. If zero, 3.
	MaxPropsMB int
	// MaxRendersInFlight caps the renders that take CPU at once: a page's Loader, then its
	// render call (up to the shell, for a page that streams). A render that only waits for
	// data holds none: a streamed page past its shell, a page waiting for its Deferred
	// values (a page's own load() in the renderer holds one while it waits: the edge cannot
	// tell that wait from rendering). Past it a request gets its fallback at once, before
	// its Loader runs.
	// If zero, 64.
	MaxRendersInFlight int
	// NotFoundPage is the app's page for paths nothing serves (404). If empty, "not-found".
	NotFoundPage string
	// CacheMaxMB bounds the HTML cache by the memory its documents hold. If zero, 256.
	CacheMaxMB int
	// CacheMaxEntryMB refuses larger documents (every encoding counted). If zero, 8.
	CacheMaxEntryMB int
	// CacheNotFoundTTL is the freshness of 404s. If zero, 10s.
	CacheNotFoundTTL time.Duration
	// CacheTTLJitter shortens each stored TTL by up to this fraction, at random, so entries
	// stored together do not expire together. If zero, 0.1; negative: none.
	CacheTTLJitter float64
	// CachePassTTL is how long requests render side by side after a render that may not be
	// stored. If zero, 10s.
	CachePassTTL time.Duration
	// CacheIgnoreQuery are query parameters no page reads (a trailing * matches a prefix).
	// If nil, common tracking parameters (utm_*, fbclid, gclid...).
	CacheIgnoreQuery []string
	// StreamTimeout bounds, from a request's arrival, how long a streaming page
	// (PageOptions.Stream) may keep Suspense boundaries pending before the browser is left to
	// render them; the render goes on to HardTimeout and fills the cache. If zero, 1s.
	StreamTimeout time.Duration
	// CrawlerUserAgent is a regular expression: requests whose User-Agent matches it get a
	// streaming page's complete document, never a stream with boundaries left to the
	// browser. If empty, "(?i)bot|crawl|spider|slurp|facebookexternalhit|embedly|preview".
	CrawlerUserAgent string
	// EarlyHints sends a 103 Early Hints response with the client build's scripts and styles
	// (Link: rel=modulepreload, rel=preload) before a request waits for its render, so the
	// browser fetches them meanwhile. Off by default here: httptest.ResponseRecorder, and
	// middleware that records the first status it sees, take the 103 for the final status.
	// The edge binary turns it on (edge.early_hints).
	EarlyHints bool
	// SharedCache turns on the cache's second level, shared by every replica of the server:
	// a Redis or Valkey at redis://host:port/db, rediss://…, or unix:///path. A page one
	// replica rendered is then a hit on the others, a cold page is rendered once across them,
	// and purges reach them all. If empty, each replica has only its own cache.
	SharedCache string
	// SharedCacheKey, if not empty, authenticates every value in that store (HMAC-SHA256):
	// a value something else wrote there is a miss. At least 32 bytes, the same on every
	// replica.
	SharedCacheKey []byte
	// SharedCacheTimeout bounds each call to that store; past it the server goes on without
	// it. If zero, 25ms.
	SharedCacheTimeout time.Duration
	// TracerProvider receives a span per page request (a child of the caller's when its W3C
	// traceparent says so), its cache lookup, a wait on another request's render, the
	// Loader, and the render call, whose trace the renderer continues (with its own
	// renderer.otlp_endpoint). If nil, no spans, at no cost.
	TracerProvider trace.TracerProvider
	// Registerer receives the edge_* metrics. If nil, they are kept in a private registry,
	// with the Go runtime's and the process's collectors, which the Admin handler serves.
	// Register one Server per Registerer.
	Registerer prometheus.Registerer
	// Logger receives fallbacks, refused sockets and bugs. If nil, slog.Default().
	Logger *slog.Logger
	// Lang is the lang of every document's html element. If empty, "en".
	Lang string
	// Head is trusted markup added to every document's head (a favicon, a font, an
	// analytics tag), before the page's own head tags.
	Head string
	// Nonce returns the Content-Security-Policy nonce of the response to r (typically set
	// by the shop's CSP middleware in r's context): every script element the document
	// carries gets it, a stored page included (its copy is made without one, and each
	// response gets its own). If nil, scripts carry no nonce.
	Nonce func(r *http.Request) string
	// BuildID identifies this server's own code (its loaders): a stored page records it, and
	// a page stored by a server of another BuildID (an older deploy, sharing the cache's
	// store) is not served. If empty, a hash of the running executable, which changes with
	// any change to the program.
	BuildID string
	// Listen is ListenAndServe's public address. If empty, ":8080".
	Listen string
	// AdminListen is ListenAndServe's admin address (health, readiness, metrics, purges):
	// keep it off the public network. If empty, "127.0.0.1:9100".
	AdminListen string
	// ShutdownDelay is how long ListenAndServe goes on serving once its context is done,
	// readiness false, while load balancers stop sending requests. If zero, none: a
	// process that no load balancer routes to.
	ShutdownDelay time.Duration
	// ShutdownTimeout is how long ListenAndServe then waits for the requests in flight. If
	// zero, 10s.
	ShutdownTimeout time.Duration
	// ErrorPage is the app's page for a Loader's failure: the response has the status the
	// loader chose (see LoadError) and a document whose page is ErrorPage with props
	// {"status": N}, which the browser renders. If empty, the failing page's document
	// without props.
	ErrorPage string
}

// config is the configuration o describes: the edge binary's embedded defaults, with each
// field of o that sets a config key (optionKeys) in its place when not zero. It has no
// routes: the Server's pages are mounted by Page.
func (o Options) config() (*config.Config, error) {
	cfg, err := config.Defaults()
	if err != nil {
		return nil, err
	}
	cfg.Edge.Routes = nil
	e := &cfg.Edge
	set(&cfg.Renderer.GRPCAddress, o.Renderer)
	set(&e.AssetsDir, o.AssetsDir)
	set(&e.RenderTimeout, o.RenderTimeout)
	set(&e.HardTimeout, o.HardTimeout)
	set(&e.MaxPageMB, o.MaxPageMB)
	set(&e.MaxPropsMB, o.MaxPropsMB)
	set(&e.MaxRendersInFlight, o.MaxRendersInFlight)
	set(&e.NotFoundPage, o.NotFoundPage)
	set(&e.CacheMaxMB, o.CacheMaxMB)
	set(&e.CacheMaxEntryMB, o.CacheMaxEntryMB)
	set(&e.CacheNotFoundTTL, o.CacheNotFoundTTL)
	set(&e.CachePassTTL, o.CachePassTTL)
	if o.CacheTTLJitter < 0 {
		e.CacheTTLJitter = 0
	} else {
		set(&e.CacheTTLJitter, o.CacheTTLJitter)
	}
	if o.CacheIgnoreQuery != nil {
		e.CacheIgnoreQuery = o.CacheIgnoreQuery
	}
	e.EarlyHints = o.EarlyHints
	set(&e.StreamTimeout, o.StreamTimeout)
	set(&e.CrawlerUserAgent, o.CrawlerUserAgent)
	set(&e.SharedCacheAddress, o.SharedCache)
	set(&e.SharedCacheKey, string(o.SharedCacheKey))
	set(&e.SharedCacheTimeout, o.SharedCacheTimeout)
	set(&e.Listen, o.Listen)
	set(&e.AdminListen, o.AdminListen)
	set(&e.ShutdownDelay, o.ShutdownDelay)
	set(&e.ShutdownTimeout, o.ShutdownTimeout)
	return cfg, nil
}

func set[T comparable](field *T, value T) {
	var zero T
	if value != zero {
		*field = value
	}
}

// optionKeys names the Options field that sets each config key, for the errors of
// config.Validate: they name the field, not the key.
var optionKeys = map[string]string{
	"renderer.grpc_address":      "Renderer",
	"edge.assets_dir":            "AssetsDir",
	"edge.render_timeout":        "RenderTimeout",
	"edge.hard_timeout":          "HardTimeout",
	"edge.max_page_mb":           "MaxPageMB",
	"edge.max_props_mb":          "MaxPropsMB",
	"edge.max_renders_in_flight": "MaxRendersInFlight",
	"edge.not_found_page":        "NotFoundPage",
	"edge.cache_max_mb":          "CacheMaxMB",
	"edge.cache_max_entry_mb":    "CacheMaxEntryMB",
	"edge.cache_not_found_ttl":   "CacheNotFoundTTL",
	"edge.cache_pass_ttl":        "CachePassTTL",
	"edge.cache_ttl_jitter":      "CacheTTLJitter",
	"edge.cache_ignore_query":    "CacheIgnoreQuery",
	"edge.early_hints":           "EarlyHints",
	"edge.stream_timeout":        "StreamTimeout",
	"edge.crawler_user_agent":    "CrawlerUserAgent",
	"edge.shared_cache_address":  "SharedCache",
	"edge.shared_cache_key":      "SharedCacheKey",
	"edge.shared_cache_timeout":  "SharedCacheTimeout",
	"edge.listen":                "Listen",
	"edge.admin_listen":          "AdminListen",
	"edge.shutdown_delay":        "ShutdownDelay",
	"edge.shutdown_timeout":      "ShutdownTimeout",
}

// configKey matches a config key in config.Validate's messages.
var configKey = regexp.MustCompile(`\b(?:edge|renderer)\.[a-z_]+\b`)

// optionsError is config.Validate's error as New returns it: each broken rule names the
// Options fields, "ssr: Options.MaxPageMB must be at least 1, got -1".
func optionsError(err error) error {
	var errs []error
	for _, err := range unjoin(err) {
		ke, ok := errors.AsType[*config.KeyError](err)
		if !ok {
			errs = append(errs, fmt.Errorf("ssr: %w", err))
			continue
		}
		errs = append(errs, fmt.Errorf("ssr: %s %s", optionName(ke.Key), namingOptions(ke.Msg)))
	}
	return errors.Join(errs...)
}

// namingOptions is msg with each config key it names replaced by the Options field that
// sets it.
func namingOptions(msg string) string { return configKey.ReplaceAllStringFunc(msg, optionName) }

func optionName(key string) string {
	if f, ok := optionKeys[key]; ok {
		return "Options." + f
	}
	return key // a default no Options field sets: valid, unless the defaults are not
}

// unjoin is the errors errors.Join joined into err, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
