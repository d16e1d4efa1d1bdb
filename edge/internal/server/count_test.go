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

// TestCountUnrouted: what the mux answers itself is counted under route "(none)"; what it
// routes is left to the handler's own count.
func TestCountUnrouted(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /p", func(http.ResponseWriter, *http.Request) {})
	m := NewMetrics(prometheus.NewRegistry())
	h := m.countUnrouted(mux)
	for _, req := range []*http.Request{httptest.NewRequest("POST", "/p", nil), httptest.NewRequest("GET", "/p", nil)} {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	if n := testutil.ToFloat64(m.requests.WithLabelValues("(none)", "405", "ssr")); n != 1 {
		t.Errorf("the mux's own 405: counted %v times, want 1", n)
	}
	if n := testutil.CollectAndCount(m.requests); n != 1 {
		t.Errorf("%d edge_requests_total series, want 1 (the routed request is its handler's to count)", n)
	}
}
