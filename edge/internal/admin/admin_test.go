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

// TestHandler: what each endpoint answers, to whom, on a laptop (loopback trusted) and in a
// pod (loopback shared with the renderer's app code: the token only).
func TestHandler(t *testing.T) {
	var draining atomic.Bool
	registry := prometheus.NewRegistry()
	registry.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "probe_total", Help: "x"}))
	local := Handler(Options{Draining: &draining, Gatherer: registry, Token: "s3cret", TrustLoopback: true, Cache: noCache{}})
	// In a pod: the renderer's app code shares the loopback interface.
	pod := Handler(Options{Draining: &draining, Gatherer: registry, Token: "s3cret", Cache: noCache{}})

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
		return serveOn(local, "GET", path, remote, auth)
	}
	tests := []struct {
		name, path, remote, auth string
		want                     int
	}{
		{"liveness", "/healthz", "10.0.0.9:1", "", 200},
		{"readiness", "/readyz", "10.0.0.9:1", "", 200},
		{"metrics", "/metrics", "10.0.0.9:1", "", 200},
		{"pprof from loopback", "/debug/pprof/", "127.0.0.1:5", "", 200},
		{"pprof from the network", "/debug/pprof/", "10.0.0.9:1", "", 403},
		{"pprof with the token", "/debug/pprof/", "10.0.0.9:1", "Bearer s3cret", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := serve(tt.path, tt.remote, tt.auth).Code; got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
	for _, tt := range []struct {
		name, method, path, remote, auth string
		want                             int
	}{
		{"pod: metrics from loopback", "GET", "/metrics", "127.0.0.1:5", "", 200},
		{"pod: pprof from loopback without the token", "GET", "/debug/pprof/", "127.0.0.1:5", "", 403},
		{"pod: purge from loopback without the token", "POST", "/cache/purge?prefix=/", "127.0.0.1:5", "", 403},
		{"pod: purge with the token", "POST", "/cache/purge?prefix=/", "127.0.0.1:5", "Bearer s3cret", 200},
		{"pod: pprof with the token", "GET", "/debug/pprof/", "10.0.0.9:1", "Bearer s3cret", 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := serveOn(pod, tt.method, tt.path, tt.remote, tt.auth).Code; got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
	if body := serve("/metrics", "10.0.0.9:1", "").Body.String(); !strings.Contains(body, "probe_total 0") {
		t.Errorf("metrics do not come from the given gatherer:\n%s", body)
	}
	draining.Store(true)
	if got := serve("/readyz", "127.0.0.1:1", "").Code; got != 503 {
		t.Errorf("readiness while draining: got %d, want 503", got)
	}
}
