package ssr

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache/redistest"
)

// TestPagesOfOtherCodeAreNotServed: a page stored by a server of another build (an older
// deploy's loaders: another executable) is not served from the shared store; one of the
// same build is.
func TestPagesOfOtherCodeAreNotServed(t *testing.T) {
	store := redistest.Start(t)
	cached := PageOptions{Cache: CachePolicy{TTL: time.Minute, Query: []string{}}, Load: func(*http.Request) (Result, error) {
		return Result{Props: map[string]int{"n": 1}}, nil
	}}
	deploy := func(build string) *fixture {
		executableHash = func() string { return build } // read once, by New
		return newFixture(t, Options{SharedCacheAddress: store})
	}
	hash := executableHash
	t.Cleanup(func() { executableHash = hash })
	old := deploy("v1")
	if rec := serve(old.srv.Page("product", cached), "/products/7"); rec.Code != 200 {
		t.Fatalf("v1: got %d", rec.Code)
	}
	waitStored(t, store)
	for _, tt := range []struct {
		build      string
		wantRender bool
	}{{"v1", false}, {"v2", true}} {
		f := deploy(tt.build)
		rec := serve(f.srv.Page("product", cached), "/products/7")
		if rendered := f.renderer.calls.Load() > 0; rendered != tt.wantRender {
			t.Errorf("a server of build %s: rendered %v (Cache-Status %q), want %v", tt.build, rendered, rec.Header().Get("Cache-Status"), tt.wantRender)
		}
	}
}

// waitStored waits until the store at address holds a page and no render lock: a render's
// copy is written after its response, on a goroutine of its own.
func waitStored(t *testing.T, address string) {
	t.Helper()
	o, err := redis.ParseURL(address)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(o)
	defer client.Close()
	ctx := context.Background()
	poll.Until(t, "a page and no render lock in the store", func() bool {
		keys, err := client.Keys(ctx, "*").Result()
		locked := slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, ":lock:") })
		page := slices.ContainsFunc(keys, func(k string) bool { return !strings.Contains(k, ":lock:") && !strings.HasSuffix(k, ":purgelog") })
		return err == nil && page && !locked
	})
}

// newBundleFixture is a Server whose renderer runs the bundle "bundle1", and has said so.
func newBundleFixture(t *testing.T) (*fixture, *fakeRenderer) {
	t.Helper()
	fake := &fakeRenderer{pages: []string{"product", "not-found"}}
	first := "bundle1"
	fake.bundle.Store(&first)
	f := newFixtureOn(t, Options{}, fake)
	check(t, f)
	return f, fake
}

// reload makes the renderer run the bundle "bundle2", without a word to the Server.
func (f *fakeRenderer) reload() {
	second := "bundle2"
	f.bundle.Store(&second)
}

// check asks the renderer for its bundle, as the Server does every 15 s.
func check(t *testing.T, f *fixture) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.srv.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestPagesOfAnotherBundleAreNotServed: once the renderer reports another server bundle, a
// page the old bundle rendered is rendered again.
func TestPagesOfAnotherBundleAreNotServed(t *testing.T) {
	f, fake := newBundleFixture(t)
	h := f.srv.Page("product", PageOptions{Cache: CachePolicy{TTL: time.Minute, Query: []string{}}})
	serve(h, "/products/7")
	if got := serve(h, "/products/7").Header().Get("Cache-Status"); !strings.Contains(got, "hit") {
		t.Fatalf("same bundle: got Cache-Status %q, want a hit", got)
	}
	fake.reload()
	check(t, f)
	if got := serve(h, "/products/7").Header().Get("Cache-Status"); strings.Contains(got, "hit") {
		t.Errorf("another bundle: got Cache-Status %q, want a render", got)
	}
}

// TestAReloadRendersEachPageOnce: after the renderer reloads another bundle, its first
// render of a page is stored as that bundle's (not as the one the edge had last asked
// about), so it is a hit from then on, also once the edge asks again; and that first render
// makes the old bundle's pages stale at once, before the edge asks.
func TestAReloadRendersEachPageOnce(t *testing.T) {
	f, fake := newBundleFixture(t)
	h := f.srv.Page("product", PageOptions{Cache: CachePolicy{TTL: time.Minute, Query: []string{}}})
	serve(h, "/products/1") // stored as bundle1's

	fake.reload() // the edge has not asked since
	before := fake.calls.Load()
	for i, ask := range []bool{false, false, true, false} {
		if ask {
			check(t, f)
			continue
		}
		if got := serve(h, "/products/7").Header().Get("Cache-Status"); i > 0 && !strings.Contains(got, "hit") {
			t.Errorf("request %d after the reload: got Cache-Status %q, want a hit", i+1, got)
		}
	}
	if n := fake.calls.Load() - before; n != 1 {
		t.Errorf("after the reload the page rendered %d times, want 1", n)
	}
	if got := serve(h, "/products/1").Header().Get("Cache-Status"); strings.Contains(got, "hit") {
		t.Errorf("a page of the old bundle after the new one rendered: got Cache-Status %q, want a render", got)
	}
}

// TestStaleCopyOfAnotherBundleIsNotServed: inside stale-if-error, with the renderer down, a
// copy the old bundle rendered is not the answer once the renderer runs another: the
// request falls back as with no copy.
func TestStaleCopyOfAnotherBundleIsNotServed(t *testing.T) {
	f, fake := newBundleFixture(t)
	h := f.srv.Page("product", PageOptions{Cache: CachePolicy{TTL: time.Millisecond, StaleIfError: time.Hour, Query: []string{}}})
	serve(h, "/products/7")
	fake.down.Store(true)
	// Past the 1 ms TTL, inside stale-if-error, as the answer itself shows: while the renderer
	// still runs the bundle that rendered the copy, the copy covers its failing render. Polled
	// for that answer, not slept into: a Server's cache keeps package clock's time, which only
	// the e2e tests' build can move, and no Option takes another clock.
	var rec *httptest.ResponseRecorder
	poll.Until(t, "the 1 ms TTL to pass (the stale copy served for the failing render)", func() bool {
		rec = serve(h, "/products/7")
		return strings.Contains(rec.Header().Get("Cache-Status"), "fwd=stale")
	})
	if rec.Code != 200 || rec.Header().Get("X-SSR-Fallback") != "" {
		t.Fatalf("renderer down on the same bundle: got %d, X-SSR-Fallback %q; want the stale copy", rec.Code, rec.Header().Get("X-SSR-Fallback"))
	}
	fake.reload()
	check(t, f)
	rec = serve(h, "/products/7")
	if status := rec.Header().Get("Cache-Status"); strings.Contains(status, "hit") || strings.Contains(status, "fwd=stale") ||
		rec.Header().Get("X-SSR-Fallback") == "" {
		t.Errorf("renderer down on another bundle: got Cache-Status %q, X-SSR-Fallback %q; want the fallback, not the old copy",
			status, rec.Header().Get("X-SSR-Fallback"))
	}
}
