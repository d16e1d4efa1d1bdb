package ssr

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLoaderDecisionSurvivesTheFallback: what a loader decided holds when the render fails
// or is late, as it would have with the render: its not-found page and 404, its status, its
// redirect, its headers.
func TestLoaderDecisionSurvivesTheFallback(t *testing.T) {
	tests := []struct {
		name       string
		result     Result
		wantStatus int
		wantPage   string // the hydration data's page; "" for a redirect
	}{
		{"not found", Result{NotFound: true}, 404, `"page":"not-found"`},
		{"gone", Result{Status: 410, Props: map[string]bool{"gone": true}}, 410, `"page":"product"`},
		{"redirect", Result{Redirect: "/products/8", Status: 301}, 301, ""},
		{"temporary redirect", Result{Redirect: "/login"}, 302, ""},
		{"headers", Result{Props: map[string]int{"n": 1}, Header: http.Header{"X-Shop": {"kept"}}}, 200, `"page":"product"`},
	}
	for _, tt := range tests {
		for _, failure := range []string{"down", "late"} {
			t.Run(tt.name+"/renderer "+failure, func(t *testing.T) {
				fake := productBundle()
				fake.delay = 5 * time.Second
				f := newFixtureOn(t, Options{}, fake)
				if failure == "down" {
					f.renderer.down.Store(true)
				}
				o := PageOptions{Load: func(*http.Request) (Result, error) { return tt.result, nil }}
				o.Timeouts.Render = 200 * time.Millisecond
				rec := serve(f.srv.Page("product", o), "/products/7")
				if rec.Code != tt.wantStatus {
					t.Fatalf("got %d, want %d; headers %v", rec.Code, tt.wantStatus, rec.Header())
				}
				if tt.result.Redirect != "" {
					if got := rec.Header().Get("Location"); got != tt.result.Redirect {
						t.Errorf("got Location %q, want %q", got, tt.result.Redirect)
					}
					return
				}
				if rec.Header().Get("X-SSR-Fallback") == "" {
					t.Errorf("want X-SSR-Fallback on a client-side-render document, got %v", rec.Header())
				}
				if data := hydrationData(rec.Body.String()); !strings.Contains(data, tt.wantPage) {
					t.Errorf("got hydration data %s, want %s", data, tt.wantPage)
				}
				for k, vs := range tt.result.Header {
					if got := rec.Header().Get(k); got != vs[0] {
						t.Errorf("got %s %q, want the loader's %q", k, got, vs[0])
					}
				}
			})
		}
	}
}

// TestPrivateDecisionStaysWithItsRequest: a follower that joined a render whose loader's
// decision is private (a cookie, Cache-Control: private) falls back without that loader's
// props or headers.
func TestPrivateDecisionStaysWithItsRequest(t *testing.T) {
	for _, header := range []http.Header{
		{"Set-Cookie": {"s=alice"}},
		{"Cache-Control": {"private, max-age=60"}},
	} {
		t.Run(fmt.Sprint(header), func(t *testing.T) {
			f := newFixtureOn(t, Options{}, &fakeRenderer{delay: 5 * time.Second})
			loaded := make(chan struct{})
			release := make(chan struct{})
			o := PageOptions{
				Cache: CachePolicy{TTL: time.Minute, Query: []string{}},
				Load: func(*http.Request) (Result, error) {
					close(loaded)
					<-release
					return Result{Props: map[string]string{"user": "alice"}, Header: header}, nil
				},
			}
			o.Timeouts.Render = 300 * time.Millisecond
			h := f.srv.Page("product", o)
			done := make(chan struct{})
			go func() { serve(h, "/products/7"); close(done) }()
			<-loaded
			close(release)
			rec := serve(h, "/products/7") // joins the flight whose loader ran
			<-done
			if strings.Contains(rec.Body.String(), "alice") || rec.Header().Get("Set-Cookie") != "" {
				t.Errorf("a follower got another request's private decision: %v %s", rec.Header(), hydrationData(rec.Body.String()))
			}
		})
	}
}

// TestImpossibleStatusIsTheLoadersError: a Result whose status no response can have is a
// loader's failure, named in the log, not a response net/http refuses or a redirect without
// one.
func TestImpossibleStatusIsTheLoadersError(t *testing.T) {
	for _, tt := range []struct {
		result  Result
		wantLog string
	}{
		{Result{Status: 99}, "status 99, not from 200 to 599"},
		{Result{Status: 1000}, "status 1000"},
		{Result{Redirect: "/cart", Status: 200}, "a redirect with status 200"},
	} {
		t.Run(tt.wantLog, func(t *testing.T) {
			f := newFixture(t, Options{})
			rec := serve(f.srv.Page("product", PageOptions{Load: func(*http.Request) (Result, error) { return tt.result, nil }}), "/products/7")
			if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("X-SSR-Fallback") != "load-error" {
				t.Fatalf("got %d %v, want 503 with X-SSR-Fallback: load-error", rec.Code, rec.Header())
			}
			if !strings.Contains(f.logs.String(), tt.wantLog) {
				t.Errorf("the log does not say %q:\n%s", tt.wantLog, f.logs.String())
			}
		})
	}
}
