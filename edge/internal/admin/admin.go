// Package admin is the admin listener's handler: liveness, readiness, metrics, and behind
// the admin token pprof and purges.
package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/pprof"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/clock"
)

// Options configure the admin handler.
type Options struct {
	// Draining turns readiness false once set.
	Draining *atomic.Bool
	// Ready, if not nil, is asked by readiness too: an error makes it false, with the
	// error's text.
	Ready func() error
	// Gatherer is served at /metrics; nil: /metrics is not served.
	Gatherer prometheus.Gatherer
	// Token, when set, admits callers with "Authorization: Bearer <Token>" to the debug and
	// purge endpoints, whatever their address: the loopback is not trusted, since in a pod
	// the renderer's app code (a load() that fetches a URL it was given) shares it.
	Token string
	// Cache is purged by POST /cache/purge.
	Cache Purger
}

// Purger removes stored documents, by "key", "path", "prefix" or "tag" (the endpoint's
// parameters): the public package's Server. The error says the shared store's part of a
// purge failed.
type Purger interface {
	Purge(ctx context.Context, by, value string) (int, error)
}

// Handler returns the admin handler: liveness, readiness (false once draining), metrics, and
// /debug/pprof/ and purges for bearers of the admin token.
func Handler(o Options) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if o.Draining.Load() {
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		if o.Ready != nil {
			if err := o.Ready(); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		w.Write([]byte("ready\n"))
	})
	if o.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{}))
	}
	debug := privileged(o.Token)
	mux.Handle("GET /debug/pprof/", debug(http.HandlerFunc(pprof.Index)))
	mux.Handle("GET /debug/pprof/cmdline", debug(http.HandlerFunc(pprof.Cmdline)))
	mux.Handle("GET /debug/pprof/profile", debug(http.HandlerFunc(pprof.Profile)))
	mux.Handle("GET /debug/pprof/symbol", debug(http.HandlerFunc(pprof.Symbol)))
	mux.Handle("GET /debug/pprof/trace", debug(http.HandlerFunc(pprof.Trace)))
	mux.Handle("POST /cache/purge", debug(purge(o.Cache)))
	clock.Mount(mux) // nothing, except in the e2e tests' build (package clock)
	return mux
}

// purge removes cache entries: ?key= an exact cache key, ?path= every variant of a
// normalized path and query, ?prefix= every entry whose path starts with it, ?tag= every
// entry its page tagged so. It answers {"purged":N}; when the shared store's part failed,
// 502 and {"purged":N,"store":false,"error":"..."}: this replica's cache is purged, the
// store's copies are refused by every replica that heard of the purge, and the store is
// purged in the background once it answers.
func purge(c Purger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		by := ""
		switch {
		case q.Has("key"):
			by = "key"
		case q.Has("path"):
			by = "path"
		case q.Has("prefix") && q.Get("prefix") != "":
			by = "prefix"
		case q.Get("tag") != "":
			by = "tag"
		default:
			http.Error(w, "purge needs ?key=, ?path=, a non-empty ?prefix= or a non-empty ?tag=", http.StatusBadRequest)
			return
		}
		n, err := c.Purge(r.Context(), by, q.Get(by))
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			msg, _ := json.Marshal(err.Error())
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, "{\"purged\":%d,\"store\":false,\"error\":%s}\n", n, msg)
			return
		}
		fmt.Fprintf(w, "{\"purged\":%d}\n", n)
	}
}
