package admin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// noCache is a Purger with nothing stored.
type noCache struct{}

func (noCache) Purge(context.Context, string, string) (int, error) { return 0, nil }

// TestHandler: what each endpoint answers, and to whom: the token's bearers only for pprof
// and purges, from the network or from the loopback (in a pod, the renderer's app code
// shares it).
func TestHandler(t *testing.T) {
	var draining atomic.Bool
	registry := prometheus.NewRegistry()
	registry.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "probe_total", Help: "x"}))
	h := Handler(Options{Draining: &draining, Gatherer: registry, Token: "s3cret", Cache: noCache{}})
	serveOn := func(h http.Handler, method, path, remote, auth string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil)
		req.RemoteAddr = remote
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	serve := func(path, remote, auth string) *httptest.ResponseRecorder {
		return serveOn(h, "GET", path, remote, auth)
	}
	for _, tt := range []struct {
		name, method, path, remote, auth string
		want                             int
	}{
		{"liveness", "GET", "/healthz", "10.0.0.9:1", "", 200},
		{"readiness", "GET", "/readyz", "10.0.0.9:1", "", 200},
		{"metrics", "GET", "/metrics", "10.0.0.9:1", "", 200},
		{"metrics from loopback", "GET", "/metrics", "127.0.0.1:5", "", 200},
		{"pprof from the network", "GET", "/debug/pprof/", "10.0.0.9:1", "", 403},
		{"pprof from loopback without the token", "GET", "/debug/pprof/", "127.0.0.1:5", "", 403},
		{"pprof with a wrong token", "GET", "/debug/pprof/", "10.0.0.9:1", "Bearer s3cre", 403},
		{"pprof with the token", "GET", "/debug/pprof/", "10.0.0.9:1", "Bearer s3cret", 200},
		{"purge from loopback without the token", "POST", "/cache/purge?prefix=/", "127.0.0.1:5", "", 403},
		{"purge with the token", "POST", "/cache/purge?prefix=/", "127.0.0.1:5", "Bearer s3cret", 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := serveOn(h, tt.method, tt.path, tt.remote, tt.auth).Code; got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
	untokened := Handler(Options{Draining: &draining, Cache: noCache{}})
	if rec := serveOn(untokened, "GET", "/debug/pprof/", "127.0.0.1:5", ""); rec.Code != 403 || !strings.Contains(rec.Body.String(), "no admin token is set") {
		t.Errorf("pprof without a token set: got %d %q, want 403 saying no token is set", rec.Code, rec.Body)
	}
	if got := serveOn(untokened, "GET", "/metrics", "10.0.0.9:1", "").Code; got != 404 {
		t.Errorf("metrics without a gatherer: got %d, want 404", got)
	}
	if body := serve("/metrics", "10.0.0.9:1", "").Body.String(); !strings.Contains(body, "probe_total 0") {
		t.Errorf("metrics do not come from the given gatherer:\n%s", body)
	}
	draining.Store(true)
	if got := serve("/readyz", "127.0.0.1:1", "").Code; got != 503 {
		t.Errorf("readiness while draining: got %d, want 503", got)
	}
}
