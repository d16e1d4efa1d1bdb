package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
)

const assetsPattern = "GET /assets/"

// Options are what the public handler is built from.
type Options struct {
	Renderer Renderer
	Manifest *document.Manifest
	Cache    *htmlcache.Cache
	Metrics  *Metrics
	Log      *slog.Logger
}

// New returns the public handler: every configured route, the not-found catch-all and
// /assets/. The configuration must have been validated by config.Load.
func New(e config.Edge, o Options) (http.Handler, error) {
	files, err := newAssets(filepath.Join(e.AssetsDir, "assets"))
	if err != nil {
		return nil, err
	}
	d := deps{
		renderer: o.Renderer, shell: document.NewShell(o.Manifest), buildID: o.Manifest.BuildID,
		cache: o.Cache, flights: &flights{cache: o.Cache}, slots: make(chan struct{}, e.MaxRendersInFlight),
		jitter: e.CacheTTLJitter, metrics: o.Metrics, log: o.Log,
	}
	mux := http.NewServeMux()
	mux.Handle(assetsPattern, files)
	for _, r := range e.Routes {
		mux.Handle(r.Pattern, newPage(r, e, d))
	}
	// Every unmatched path shares one entry; it may be served stale for an hour while the
	// renderer is down, since a not-found page rarely changes.
	notFound := newPage(config.Route{Pattern: config.NotFoundPattern, Page: e.NotFoundPage, Cache: config.RouteCache{
		TTL: e.CacheNotFoundTTL, StaleWhileRevalidate: e.CacheNotFoundTTL, StaleIfError: time.Hour,
	}}, e, d)
	notFound.unmatched = true
	mux.Handle(config.NotFoundPattern, notFound)
	return withRecover(o.Log)(withRequestID(o.Metrics.instrument(mux))), nil
}

// NewCache returns the HTML cache sized by e, reporting evictions, entries and bytes to m.
func NewCache(e config.Edge, m *Metrics) *htmlcache.Cache {
	c := htmlcache.New(htmlcache.Options{
		MaxBytes: e.CacheMaxMB << 20, MaxEntryBytes: e.CacheMaxEntryMB << 20,
		OnEvict: func(*htmlcache.Entry) { m.evictions.Inc() },
	})
	m.watch(c)
	return c
}

// AdminOptions configure the admin handler.
type AdminOptions struct {
	// Draining turns readiness false once set.
	Draining *atomic.Bool
	// Gatherer is served at /metrics.
	Gatherer prometheus.Gatherer
	// Token, when set, admits callers with "Authorization: Bearer <Token>" to the debug and
	// purge endpoints from any address.
	Token string
	// TrustLoopback admits loopback callers to them without the token.
	TrustLoopback bool
	// Cache is purged by POST /cache/purge.
	Cache *htmlcache.Cache
}

// Admin returns the admin handler: liveness, readiness (false once draining), metrics, and
// /debug/pprof/ and purges for bearers of the admin token (and loopback callers if trusted).
func Admin(o AdminOptions) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if o.Draining.Load() {
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{}))
	debug := privileged(o.Token, o.TrustLoopback)
	mux.Handle("GET /debug/pprof/", debug(http.HandlerFunc(pprof.Index)))
	mux.Handle("GET /debug/pprof/cmdline", debug(http.HandlerFunc(pprof.Cmdline)))
	mux.Handle("GET /debug/pprof/profile", debug(http.HandlerFunc(pprof.Profile)))
	mux.Handle("GET /debug/pprof/symbol", debug(http.HandlerFunc(pprof.Symbol)))
	mux.Handle("GET /debug/pprof/trace", debug(http.HandlerFunc(pprof.Trace)))
	mux.Handle("POST /cache/purge", debug(purge(o.Cache)))
	return mux
}

// purge removes cache entries: ?key= an exact cache key, ?path= every variant of a
// normalized path and query, ?prefix= every entry whose path starts with it.
func purge(c *htmlcache.Cache) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		n := 0
		switch {
		case q.Has("key"):
			if c.Purge(q.Get("key")) {
				n = 1
			}
		case q.Has("path"):
			path := q.Get("path")
			n = c.PurgeIf(func(e *htmlcache.Entry) bool { return e.Path == path })
		case q.Has("prefix") && q.Get("prefix") != "":
			prefix := q.Get("prefix")
			n = c.PurgeIf(func(e *htmlcache.Entry) bool { return strings.HasPrefix(e.Path, prefix) })
		default:
			http.Error(w, "purge needs ?key=, ?path= or a non-empty ?prefix=", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"purged\":%d}\n", n)
	}
}
