package ssr

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestUnknownPageName: a page name the renderer's bundle lacks is found at start, by Check
// and in the log, and its requests never answer 200.
func TestUnknownPageName(t *testing.T) {
	f := newFixtureOn(t, Options{}, &fakeRenderer{pages: []string{"home", "product", "not-found"}})
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
	f := newFixtureOn(t, Options{}, &fakeRenderer{pages: []string{"product", "not-found"}})
	f.srv.Page("product", PageOptions{})
	f.srv.NotFound()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.srv.Check(ctx); err != nil {
		t.Errorf("got %v, want nil", err)
	}
}

// TestStreamedPageFromABundleThatCannotStream: a page that streams from a bundle without
// renderToPipeableStream is found at start (Check, readiness and the log), not answered
// with the client-side shell on every request; the same bundle serves pages that do not
// stream.
func TestStreamedPageFromABundleThatCannotStream(t *testing.T) {
	for _, canStream := range []bool{false, true} {
		f := newFixtureOn(t, Options{}, &fakeRenderer{pages: []string{"article", "home"}, cannotStream: !canStream})
		mux := http.NewServeMux()
		mux.Handle("GET /articles/{slug}", f.srv.Page("article", PageOptions{Stream: true}))
		mux.Handle("GET /{$}", f.srv.Page("home", PageOptions{}))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := f.srv.Check(ctx)
		cancel()
		if canStream {
			if err != nil {
				t.Errorf("a bundle that can stream: Check got %v, want nil", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), `"article"`) || !strings.Contains(err.Error(), "renderToPipeableStream") {
			t.Fatalf("Check: got %v, want an error naming the streamed page and renderToPipeableStream", err)
		}
		if strings.Contains(err.Error(), `"home"`) {
			t.Errorf("Check names a page that does not stream: %v", err)
		}
		if err := f.srv.Ready(); err == nil || !strings.Contains(err.Error(), `"article"`) {
			t.Errorf("Ready: got %v, want the same error", err)
		}
		if logs := f.logs.String(); !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "page=article") {
			t.Errorf("the page that cannot stream is not logged at ERROR:\n%s", logs)
		}
	}
}

// TestReadyAfterARefusedPage: a page the renderer refuses (its bundle changed since it
// answered, or it never did) makes Ready report it.
func TestReadyAfterARefusedPage(t *testing.T) {
	f := newFixtureOn(t, Options{}, &fakeRenderer{unknown: true})
	if err := f.srv.Ready(); err != nil {
		t.Fatalf("before any render: got %v, want nil", err)
	}
	serve(f.srv.Page("gone", PageOptions{}), "/")
	if err := f.srv.Ready(); err == nil || !strings.Contains(err.Error(), `"gone"`) {
		t.Errorf("after a refused render: got %v, want an error naming the page", err)
	}
}
