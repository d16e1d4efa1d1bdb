package ssr

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestCachedPageMustDeclareItsQuery: a cached page that does not say which query
// parameters it reads is refused where it is mounted, naming the option; an uncached one
// need not say.
func TestCachedPageMustDeclareItsQuery(t *testing.T) {
	f := newFixtureOn(t, Options{}, &fakeRenderer{pages: []string{"home"}})
	f.srv.Page("home", PageOptions{})
	if err := f.srv.Check(context.Background()); err != nil {
		t.Fatalf("an uncached page without Query: %v", err)
	}
	h := f.srv.Page("home", PageOptions{Cache: CachePolicy{TTL: time.Minute}})
	err := f.srv.Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "PageOptions.Cache.Query") || !strings.Contains(err.Error(), "[] for none") {
		t.Errorf("Check: got %v, want an error naming PageOptions.Cache.Query and how to declare none", err)
	}
	if rec := serve(h, "/?u=1"); rec.Code != http.StatusInternalServerError {
		t.Errorf("the refused page answered %d, want 500", rec.Code)
	}
	if !strings.Contains(f.logs.String(), "level=ERROR") {
		t.Errorf("the refusal is not logged at ERROR:\n%s", f.logs)
	}
}

// TestUnknownQueryBuysNoRender: 1,000 requests with query parameters the page does not read
// render it once, and its loader sees only the ones it reads.
func TestUnknownQueryBuysNoRender(t *testing.T) {
	f := newFixture(t, Options{})
	var seen []string
	h := f.srv.Page("home", PageOptions{
		Cache: CachePolicy{TTL: time.Minute, Query: []string{"page"}},
		Load: func(r *http.Request) (Result, error) {
			seen = append(seen, r.URL.RawQuery)
			return Result{Props: map[string]string{"page": r.URL.Query().Get("page")}}, nil
		},
	})
	for i := range 1000 {
		if rec := serve(h, fmt.Sprintf("/?zz%d=%d&page=2", i, i)); rec.Code != http.StatusOK {
			t.Fatalf("request %d: got %d", i, rec.Code)
		}
	}
	if n := f.renderer.calls.Load(); n != 1 {
		t.Errorf("1,000 requests with unknown parameters made %d renders, want 1", n)
	}
	if len(seen) != 1 || seen[0] != "page=2" {
		t.Errorf("the loader saw %q, want only page=2", seen)
	}
}
