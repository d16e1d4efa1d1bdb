package ssr

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type userKey struct{}

// TestSharedRendersSeeNoMiddlewareValues: a middleware's request-scoped values (a signed-in
// user) never reach the loader of a render that may be shared or stored, so one visitor's
// name cannot end up in the page every visitor gets. A request that bypasses the cache
// renders for itself alone and keeps them.
func TestSharedRendersSeeNoMiddlewareValues(t *testing.T) {
	load := func(r *http.Request) (Result, error) {
		user, _ := r.Context().Value(userKey{}).(string)
		return Result{Props: map[string]string{"user": user}}, nil
	}
	tests := []struct {
		name     string
		cache    Cache
		header   string
		wantUser string
	}{
		{"cached route", Cache{TTL: time.Minute}, "", `"user":""`},
		{"cached route, personal request (Authorization)", Cache{TTL: time.Minute}, "Bearer x", `"user":"alice"`},
		{"uncached route", Cache{}, "", `"user":"alice"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			mux := http.NewServeMux()
			mux.Handle("GET /products/{id}", f.srv.Page("product", PageOptions{Cache: tt.cache, Load: load}))
			signedIn := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, "alice")))
			})
			r := httptest.NewRequest("GET", "/products/7", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			rec := httptest.NewRecorder()
			signedIn.ServeHTTP(rec, r)
			if data := hydrationData(rec.Body.String()); !strings.Contains(data, tt.wantUser) {
				t.Errorf("got %s, want %s", data, tt.wantUser)
			}
		})
	}
}
