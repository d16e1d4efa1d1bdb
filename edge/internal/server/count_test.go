package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCount(t *testing.T) {
	tests := []struct {
		name, route string
		handler     http.HandlerFunc
		wantCode    string
		wantOutcome string
	}{
		{"a rendered page", "GET /{$}", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) }, "200", "ssr"},
		{"a page's own status", "GET /{$}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) }, "404", "ssr"},
		{"a fallback, by its reason", "GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-SSR-Fallback", ReasonTimeout)
			w.WriteHeader(http.StatusOK)
		}, "200", ReasonTimeout},
		{"an asset", assetsPattern, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("js")) }, "200", "asset"},
		{"103 Early Hints, then the page", "GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusMultipleChoices)
		}, "300", "ssr"},
		{"the client went away before an answer", "GET /{$}", func(http.ResponseWriter, *http.Request) {}, "0", "client-closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMetrics(prometheus.NewRegistry())
			m.count(tt.route, false, tt.handler).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
			if n := testutil.ToFloat64(m.requests.WithLabelValues(tt.route, tt.wantCode, tt.wantOutcome)); n != 1 {
				t.Errorf("edge_requests_total{route=%q, code=%q, outcome=%q} = %v, want 1", tt.route, tt.wantCode, tt.wantOutcome, n)
			}
			if n := testutil.CollectAndCount(m.requestDuration); n != 1 {
				t.Errorf("%d edge_request_duration_seconds series, want 1", n)
			}
		})
	}
}

// TestCountUnanswered: what no page answers (the router's own 405, a handler of the shop's
// own) is counted under the route its router named (NameRoute), else the ServeMux pattern
// that matched, else "(none)"; what a page answers is left to the page's count, on any
// router.
func TestCountUnanswered(t *testing.T) {
	ok := func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }
	tests := []struct {
		name     string
		router   func(mux *http.ServeMux) http.Handler
		wantShop string // the route /shop is counted under
	}{
		{"ServeMux", func(mux *http.ServeMux) http.Handler { return mux }, "GET /shop"},
		{"a router that records no pattern", func(mux *http.ServeMux) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { mux.ServeHTTP(w, r.Clone(r.Context())) })
		}, "(none)"},
		{"a router naming its route", func(mux *http.ServeMux) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				in := r.Clone(r.Context())
				mux.ServeHTTP(w, in)
				if in.Pattern != "" {
					NameRoute(r, "/shop (named)")
				}
			})
		}, "/shop (named)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMetrics(prometheus.NewRegistry())
			mux := http.NewServeMux()
			mux.Handle("GET /p", m.count("GET /p", false, http.HandlerFunc(ok)))
			mux.HandleFunc("GET /shop", ok)
			h := m.countUnanswered(tt.router(mux))
			for _, req := range []*http.Request{httptest.NewRequest("POST", "/p", nil), httptest.NewRequest("GET", "/p", nil), httptest.NewRequest("GET", "/shop", nil)} {
				h.ServeHTTP(httptest.NewRecorder(), req)
			}
			for _, c := range []struct{ route, code string }{{"(none)", "405"}, {tt.wantShop, "200"}, {"GET /p", "200"}} {
				if n := testutil.ToFloat64(m.requests.WithLabelValues(c.route, c.code, "ssr")); n != 1 {
					t.Errorf("route %s, status %s: counted %v times, want 1", c.route, c.code, n)
				}
			}
			if n := testutil.CollectAndCount(m.requests); n != 3 {
				t.Errorf("%d edge_requests_total series, want 3 (the page's request counted once)", n)
			}
		})
	}
}
