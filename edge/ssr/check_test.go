package ssr

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestUnknownPageName: a page name the renderer's bundle lacks is found at start, by Check
// and in the log, and its requests never answer 200.
func TestUnknownPageName(t *testing.T) {
	f := newFixtureOn(t, Options{}, &fakeRenderer{pages: []string{"home", "product", "not-found"}, notFoundPage: "not-found"})
	mux := http.NewServeMux()
	mux.Handle("GET /products/{id}", f.srv.Page("product", PageOptions{}))
	mux.Handle("GET /typo", f.srv.Page("prodcut", PageOptions{}))
	mux.Handle("GET /", f.srv.NotFound())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := f.srv.Check(ctx)
	if err == nil || !strings.Contains(err.Error(), `"prodcut"`) || !strings.Contains(err.Error(), `Page("prodcut")`) {
		t.Fatalf("Check: got %v, want an error naming the page and where it is used", err)
	}
	if strings.Contains(err.Error(), `"product"`) {
		t.Errorf("Check names a page the bundle has: %v", err)
	}
	if !strings.Contains(f.logs.String(), "level=ERROR") || !strings.Contains(f.logs.String(), "page=prodcut") {
		t.Errorf("the missing page is not logged at ERROR:\n%s", f.logs.String())
	}
	// Render's page names are checked as they are first used.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.srv.Render(w, r, "no-such-page", Result{}) })
	serve(h, "/")
	if err := f.srv.Check(ctx); err == nil || !strings.Contains(err.Error(), "no-such-page") {
		t.Errorf("Check after Render of an unknown page: got %v", err)
	}
}

// TestUnknownPageNeverAnswers200: the renderer's NOT_FOUND for a page name is a 500.
func TestUnknownPageNeverAnswers200(t *testing.T) {
	f := newFixtureOn(t, Options{}, &fakeRenderer{})
	f.renderer.unknown = true
	for _, cached := range []bool{false, true} {
		o := PageOptions{}
		if cached {
			o.Cache.TTL, o.Cache.Query = time.Minute, []string{}
		}
		rec := serve(f.srv.Page("does-not-exist", o), "/")
		if rec.Code != http.StatusInternalServerError || rec.Header().Get("X-SSR-Fallback") != "unknown-page" {
			t.Errorf("cached %v: got %d %q, want 500 unknown-page", cached, rec.Code, rec.Header().Get("X-SSR-Fallback"))
		}
	}
}

func TestCheckWithAllPagesKnown(t *testing.T) {
	f := newFixtureOn(t, Options{}, &fakeRenderer{pages: []string{"product", "not-found"}, notFoundPage: "not-found"})
	f.srv.Page("product", PageOptions{})
	f.srv.NotFound()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.srv.Check(ctx); err != nil {
		t.Errorf("got %v, want nil", err)
	}
}

// TestPageFromABundleThatCannotRenderIt: a page that streams, or is partially prerendered,
// from a bundle without the exports that do it is found at start (Check, readiness and the
// log), not answered with the client-side shell on every request; the same bundle serves
// pages that need neither.
func TestPageFromABundleThatCannotRenderIt(t *testing.T) {
	prerendered := PageOptions{Cache: CachePolicy{TTL: time.Minute, Query: []string{}},
		PerRequest: map[string]RequestValue{"cart": func(*http.Request) (any, error) { return nil, nil }}}
	for _, tt := range []struct {
		name                          string
		page                          PageOptions
		cannotStream, cannotPrerender bool
		exports                       string // named in the error; "" for a bundle that can
	}{
		{"streams, the bundle can", PageOptions{Stream: true}, false, false, ""},
		{"streams, the bundle cannot", PageOptions{Stream: true}, true, false, "renderToPipeableStream"},
		{"prerendered, the bundle can", prerendered, false, false, ""},
		{"prerendered, the bundle cannot", prerendered, false, true, "prerenderToNodeStream"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixtureOn(t, Options{}, &fakeRenderer{pages: []string{"article", "home"}, cannotStream: tt.cannotStream, cannotPrerender: tt.cannotPrerender})
			mux := http.NewServeMux()
			mux.Handle("GET /articles/{slug}", f.srv.Page("article", tt.page))
			mux.Handle("GET /{$}", f.srv.Page("home", PageOptions{}))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := f.srv.Check(ctx)
			cancel()
			if tt.exports == "" {
				if err != nil {
					t.Errorf("Check got %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), `"article"`) || !strings.Contains(err.Error(), tt.exports) {
				t.Fatalf("Check: got %v, want an error naming the page and %s", err, tt.exports)
			}
			if strings.Contains(err.Error(), `"home"`) {
				t.Errorf("Check names a page that needs neither: %v", err)
			}
			if code, body := readyz(f); code != http.StatusServiceUnavailable || !strings.Contains(body, `"article"`) {
				t.Errorf("/readyz: got %d %q, want 503 naming the page", code, body)
			}
			if logs := f.logs.String(); !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "page=article") {
				t.Errorf("the page is not logged at ERROR:\n%s", logs)
			}
		})
	}
}

// TestReadyAfterARefusedPage: a page the renderer refuses (its bundle changed since it
// answered, or it never did) makes readiness false, naming it.
func TestReadyAfterARefusedPage(t *testing.T) {
	f := newFixtureOn(t, Options{}, &fakeRenderer{unknown: true})
	if code, body := readyz(f); code != http.StatusOK {
		t.Fatalf("before any render: got %d %q, want 200", code, body)
	}
	serve(f.srv.Page("gone", PageOptions{}), "/")
	if code, body := readyz(f); code != http.StatusServiceUnavailable || !strings.Contains(body, `"gone"`) {
		t.Errorf("after a refused render: got %d %q, want 503 naming the page", code, body)
	}
}

// readyz is what the Admin handler's readiness answers.
func readyz(f *fixture) (int, string) {
	rec := httptest.NewRecorder()
	f.srv.Admin().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	return rec.Code, rec.Body.String()
}

// TestNotFoundPageIsTheBundles: the not-found page is the one the bundle's notFoundPage
// export names, for NotFound and for a loader's NotFound; a bundle that names none is found
// at start, and its 404s leave the page to the browser's own notFoundPage, with no render.
func TestNotFoundPageIsTheBundles(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gone := func(*http.Request) (Result, error) { return Result{NotFound: true}, nil }

	f := newFixtureOn(t, Options{}, &fakeRenderer{pages: []string{"product", "gone"}, notFoundPage: "gone"})
	mux := http.NewServeMux()
	mux.Handle("GET /products/{id}", f.srv.Page("product", PageOptions{Load: gone}))
	mux.Handle("GET /", f.srv.NotFound())
	if err := f.srv.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
	for _, target := range []string{"/nothing/here", "/products/7"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "gone: {}") {
			t.Errorf("%s: got %d %q, want 404 with the bundle's notFoundPage rendered", target, rec.Code, rec.Body.String())
		}
	}

	f = newFixtureOn(t, Options{}, &fakeRenderer{pages: []string{"product", "not-found"}})
	mux = http.NewServeMux()
	mux.Handle("GET /", f.srv.NotFound())
	err := f.srv.Check(ctx)
	if err == nil || !strings.Contains(err.Error(), "exports no notFoundPage") || !strings.Contains(err.Error(), "the not-found page") {
		t.Fatalf("Check with a bundle naming no not-found page: got %v", err)
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/nothing/here", nil))
	if rec.Code != http.StatusNotFound || rec.Header().Get("X-SSR-Fallback") != "unknown-page" || !strings.Contains(rec.Body.String(), `"page":""`) {
		t.Errorf("got %d %v %q, want 404 with a document naming no page, for the app's client", rec.Code, rec.Header(), rec.Body.String())
	}
	if n := f.renderer.calls.Load(); n != 0 {
		t.Errorf("%d render calls for a page the bundle does not name, want none", n)
	}
	if !strings.Contains(f.logs.String(), "exports no notFoundPage") {
		t.Errorf("not logged:\n%s", f.logs.String())
	}
}
