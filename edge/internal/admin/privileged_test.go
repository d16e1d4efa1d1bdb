package admin

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestPrivileged(t *testing.T) {
	tests := []struct {
		name         string
		token        string
		remote, auth string
		want         int
	}{
		{"loopback, no token", "s3cret", "127.0.0.1:5", "", 403},
		{"loopback v6, no token", "s3cret", "[::1]:5", "", 403},
		{"loopback, the token", "s3cret", "127.0.0.1:5", "Bearer s3cret", 200},
		{"network, no token", "s3cret", "10.0.0.9:1", "", 403},
		{"network, a wrong token", "s3cret", "10.0.0.9:1", "Bearer nope", 403},
		{"network, the token without Bearer", "s3cret", "10.0.0.9:1", "s3cret", 403},
		{"network, the token", "s3cret", "10.0.0.9:1", "Bearer s3cret", 200},
		{"no token configured, an empty bearer", "", "10.0.0.9:1", "Bearer ", 403},
		{"no token configured, loopback", "", "127.0.0.1:5", "", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := privileged(tt.token)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			req := httptest.NewRequest("GET", "/debug/pprof/", nil)
			req.RemoteAddr = tt.remote
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Errorf("got %d, want %d", rec.Code, tt.want)
			}
		})
	}
}
