package server

import (
	"log/slog"
	"net/http"
	"path/filepath"
	"sync/atomic"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
)

// New returns the public handler: every configured route, the not-found catch-all and
// /assets/. The configuration must have been validated by config.Load.
func New(e config.Edge, renderer Renderer, manifest *document.Manifest, log *slog.Logger) (http.Handler, error) {
	files, err := newAssets(filepath.Join(e.AssetsDir, "assets"))
	if err != nil {
		return nil, err
	}
	shell := document.NewShell(manifest)
	mux := http.NewServeMux()
	mux.Handle("GET /assets/", files)
	for _, r := range e.Routes {
		mux.Handle(r.Pattern, newPage(r, e, renderer, shell, log))
	}
	notFound := newPage(config.Route{Pattern: config.NotFoundPattern, Page: e.NotFoundPage}, e, renderer, shell, log)
	notFound.unmatched = true
	mux.Handle(config.NotFoundPattern, notFound)
	return withRecover(log)(withRequestID(mux)), nil
}

// Admin returns the admin handler: liveness, and readiness that turns false once draining.
func Admin(draining *atomic.Bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if draining.Load() {
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	return mux
}
