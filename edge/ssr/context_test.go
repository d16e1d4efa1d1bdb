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
		cache    CachePolicy
		header   string
		wantUser string
	}{
		{"cached route", CachePolicy{TTL: time.Minute, Query: []string{}}, "", `"user":""`},
		{"cached route, personal request (Authorization)", CachePolicy{TTL: time.Minute, Query: []string{}}, "Bearer x", `"user":"alice"`},
		{"uncached route", CachePolicy{}, "", `"user":"alice"`},
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

// TestSharedLoaderSeesOnlyTheKey: the request a shared render's loader gets has no Host,
// RemoteAddr or TLS (the key holds none of them), and its variant values as the key holds
// them; a request that bypasses the cache gets its own.
func TestSharedLoaderSeesOnlyTheKey(t *testing.T) {
	type seen struct{ Host, RemoteAddr, Lang string }
	got := make(chan seen, 1)
	load := func(r *http.Request) (Result, error) {
		got <- seen{r.Host, r.RemoteAddr, r.Header.Get("Accept-Language")}
		return Result{Props: map[string]string{"canonical": "https://" + r.Host + r.URL.Path}}, nil
	}
	tests := []struct {
		name   string
		cache  CachePolicy
		header string
		want   seen
	}{
		{"cached route", CachePolicy{TTL: time.Minute, Query: []string{}}, "", seen{"", "", "de , fr"}}, // the first header, trimmed and lower-cased
		{"bypass (Authorization)", CachePolicy{TTL: time.Minute, Query: []string{}}, "Bearer x", seen{"evil.example", "203.0.113.9:4711", " DE , fr"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			h := f.srv.Page("product", PageOptions{Cache: tt.cache, Variants: []string{"header:Accept-Language"}, Load: load})
			r := httptest.NewRequest("GET", "http://evil.example/products/7", nil)
			r.RemoteAddr = "203.0.113.9:4711"
			r.Header.Set("Accept-Language", " DE , fr")
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			mux := http.NewServeMux()
			mux.Handle("GET /products/{id}", h)
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, r)
			if s := <-got; s != tt.want {
				t.Errorf("the loader saw %+v, want %+v", s, tt.want)
			}
			if tt.header == "" && strings.Contains(rec.Body.String(), "evil.example") {
				t.Errorf("a shared page carries the sender's Host: %s", hydrationData(rec.Body.String()))
			}
		})
	}
}

// TestPersonalResponsesArePrivate: a response rendered for one client (Authorization, a
// personalizing cookie) says so to any cache in front; a shared one does not.
func TestPersonalResponsesArePrivate(t *testing.T) {
	tests := []struct {
		name, header, value, want string
	}{
		{"authorization", "Authorization", "Bearer x", "private"},
		{"personalizing cookie", "Cookie", "session=1", "private"},
		{"anonymous", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			h := f.srv.Page("product", PageOptions{Cache: CachePolicy{TTL: time.Minute, Query: []string{}, PersonalizeCookies: []string{"session"}}})
			rec := serve(h, "/products/7", tt.header, tt.value)
			if got := rec.Header().Get("Cache-Control"); got != tt.want {
				t.Errorf("got Cache-Control %q, want %q", got, tt.want)
			}
		})
	}
}
