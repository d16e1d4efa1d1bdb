package server

import (
	"log/slog"
	"net/http"
	"net/http/pprof"
	"path/filepath"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
)

const assetsPattern = "GET /assets/"

// deps are what every page handler shares.
type deps struct {
	renderer Renderer
	shell    *document.Shell
	metrics  *Metrics
	log      *slog.Logger
}

// New returns the public handler: every configured route, the not-found catch-all and
// /assets/. The configuration must have been validated by config.Load.
func New(e config.Edge, renderer Renderer, manifest *document.Manifest, metrics *Metrics, log *slog.Logger) (http.Handler, error) {
	files, err := newAssets(filepath.Join(e.AssetsDir, "assets"))
	if err != nil {
		return nil, err
	}
	d := deps{renderer: renderer, shell: document.NewShell(manifest), metrics: metrics, log: log}
	mux := http.NewServeMux()
	mux.Handle(assetsPattern, files)
	for _, r := range e.Routes {
		mux.Handle(r.Pattern, newPage(r, e, d))
	}
	notFound := newPage(config.Route{Pattern: config.NotFoundPattern, Page: e.NotFoundPage}, e, d)
	notFound.unmatched = true
	mux.Handle(config.NotFoundPattern, notFound)
	return withRecover(log)(withRequestID(metrics.instrument(mux))), nil
}

// AdminOptions configure the admin handler.
type AdminOptions struct {
	// Draining turns readiness false once set.
	Draining *atomic.Bool
	// Gatherer is served at /metrics.
	Gatherer prometheus.Gatherer
	// Token, when set, admits callers with "Authorization: Bearer <Token>" to the debug
	// endpoints from any address; without it only loopback callers reach them.
	Token string
}

// Admin returns the admin handler: liveness, readiness (false once draining), metrics, and
// /debug/pprof/ for loopback callers or bearers of the admin token.
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
	debug := privileged(o.Token)
	mux.Handle("GET /debug/pprof/", debug(http.HandlerFunc(pprof.Index)))
	mux.Handle("GET /debug/pprof/cmdline", debug(http.HandlerFunc(pprof.Cmdline)))
	mux.Handle("GET /debug/pprof/profile", debug(http.HandlerFunc(pprof.Profile)))
	mux.Handle("GET /debug/pprof/symbol", debug(http.HandlerFunc(pprof.Symbol)))
	mux.Handle("GET /debug/pprof/trace", debug(http.HandlerFunc(pprof.Trace)))
	return mux
}
