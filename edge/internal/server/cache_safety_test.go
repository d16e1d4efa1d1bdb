package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// TestPrivateResponseReachesOneClient: requests that coalesced on a render whose response
// sets a cookie each get a render of their own, never the first client's cookie.
func TestPrivateResponseReachesOneClient(t *testing.T) {
	s := start(t, cached)
	release := make(chan struct{})
	var calls atomic.Int64
	s.renderer.render = func(context.Context, *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
		n := calls.Add(1)
		if n == 1 {
			<-release // the others queue on this render
		}
		return &ssrv1.RenderResponse{Status: 200, Html: []byte("hello"),
			Headers: []*ssrv1.Header{{Name: "Set-Cookie", Value: fmt.Sprintf("sid=%d", n)}}}, nil
	}
	const clients = 20
	cookies := make(chan string, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := get(t, s.url+"/")
			cookies <- resp.Header.Get("Set-Cookie")
		}()
	}
	poll.Until(t, "every client to wait on the first render", func() bool {
		return testutilCount(s, "edge_cache_collapsed_total") == clients-1
	})
	close(release)
	wg.Wait()
	close(cookies)
	seen := map[string]bool{}
	for c := range cookies {
		if c == "" || seen[c] {
			t.Errorf("cookie %q reached more than one client (or none)", c)
		}
		seen[c] = true
	}
	if calls.Load() != clients {
		t.Errorf("got %d renders for %d clients, want one each", calls.Load(), clients)
	}
}

// TestUnstorableRefreshKeepsTheGoodCopy: the page answers 503 while its backend is down.
// Inside stale-while-revalidate the refresh leaves the stored copy; inside stale-if-error
// the client gets the stored copy instead of the 503; once the page recovers the next
// render is stored again at once.
func TestUnstorableRefreshKeepsTheGoodCopy(t *testing.T) {
	s := start(t, cached) // ttl 10s, swr 5s, sie 60s
	var down atomic.Bool
	calls := counting(s, func(n int64) (*ssrv1.RenderResponse, error) {
		if down.Load() {
			return &ssrv1.RenderResponse{Status: 503, Html: []byte("backend down")}, nil
		}
		return body(fmt.Sprintf("version-%d", n))(n)
	})
	get(t, s.url+"/")
	down.Store(true)

	s.clock.advance(12 * time.Second) // stale-while-revalidate
	resp, b := get(t, s.url+"/")
	if !strings.Contains(b, "version-1") || !strings.HasPrefix(resp.Header.Get("Cache-Status"), "sidecar-ssr; hit; ttl=-2") {
		t.Fatalf("stale hit: got Cache-Status %q", resp.Header.Get("Cache-Status"))
	}
	poll.Until(t, "the background refresh", func() bool { return calls.Load() == 2 })
	poll.Until(t, "the refresh to finish", func() bool { return testutilCount(s, "edge_renders_in_flight") == 0 })
	if e, _ := s.cache.Get(homeKey); e == nil || e.Pass {
		t.Fatalf("a 503 refresh replaced the stored copy with %+v", e)
	}

	s.clock.advance(10 * time.Second) // stale-if-error
	resp, b = get(t, s.url+"/")
	if resp.StatusCode != 200 || !strings.Contains(b, "version-1") {
		t.Errorf("inside stale-if-error the page's 503 reached the client: %d %q", resp.StatusCode, resp.Header.Get("Cache-Status"))
	}
	if got, want := resp.Header.Get("Cache-Status"), "sidecar-ssr; fwd=stale; fwd-status=503; ttl=-12; detail=server-error"; got != want {
		t.Errorf("got Cache-Status %q, want %q", got, want)
	}

	down.Store(false)
	resp, _ = get(t, s.url+"/")
	if got := resp.Header.Get("Cache-Status"); !strings.HasSuffix(got, "stored") {
		t.Errorf("recovered page: got Cache-Status %q, want it stored", got)
	}
	if resp, _ = get(t, s.url+"/"); !strings.HasPrefix(resp.Header.Get("Cache-Status"), "sidecar-ssr; hit") {
		t.Errorf("after recovery: got Cache-Status %q, want a hit", resp.Header.Get("Cache-Status"))
	}
}

// TestHitForMissIsShortAndGivesWay: a marker lives Options.PassTTL, not the route's windows,
// and the next storable render replaces it.
func TestHitForMissIsShortAndGivesWay(t *testing.T) {
	s := start(t, func(e *testSite) { cached(e); e.PassTTL = 2 * time.Second })
	var noStore atomic.Bool
	noStore.Store(true)
	counting(s, func(n int64) (*ssrv1.RenderResponse, error) {
		return &ssrv1.RenderResponse{Status: 200, Html: []byte("page"), Cache: &ssrv1.CacheHint{NoStore: noStore.Load()}}, nil
	})
	get(t, s.url+"/")
	if e, _ := s.cache.Get(homeKey); e == nil || !e.Pass {
		t.Fatalf("no hit-for-miss marker after a no-store render")
	}
	s.clock.advance(2 * time.Second)
	if e, _ := s.cache.Get(homeKey); e != nil {
		t.Errorf("the marker outlived Options.PassTTL")
	}

	get(t, s.url+"/") // a marker again
	noStore.Store(false)
	resp, _ := get(t, s.url+"/")
	if got := resp.Header.Get("Cache-Status"); got != "sidecar-ssr; fwd=miss; detail=uncacheable; fwd-status=200" {
		t.Errorf("got Cache-Status %q, want a hit-for-miss render", got)
	}
	if resp, _ := get(t, s.url+"/"); !strings.HasPrefix(resp.Header.Get("Cache-Status"), "sidecar-ssr; hit") {
		t.Errorf("the storable render did not replace the marker: got %q", resp.Header.Get("Cache-Status"))
	}
}

func TestVaryNamesWhatTheKeyUses(t *testing.T) {
	tests := []struct {
		name  string
		route func(*Route)
		want  string
	}{
		{"no variants", func(*Route) {}, "Accept-Encoding"},
		{"header variant", func(r *Route) { r.Variants = []string{"header:accept-language"} }, "Accept-Encoding, Accept-Language"},
		{"cookie variant", func(r *Route) { r.Variants = []string{"cookie:currency", "header:X-Region"} }, "Accept-Encoding, X-Region, Cookie"},
		{"personalizing cookie", func(r *Route) { r.Cache.PersonalizeCookies = []string{"session"} }, "Accept-Encoding, Cookie"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, func(e *testSite) { cached(e); tt.route(&e.Routes[0]) })
			counting(s, body("page"))
			for _, what := range []string{"miss", "hit"} {
				resp, _ := get(t, s.url+"/")
				if got := strings.Join(resp.Header.Values("Vary"), ", "); got != tt.want {
					t.Errorf("%s: got Vary %q, want %q", what, got, tt.want)
				}
			}
		})
		t.Run(tt.name+", uncached route", func(t *testing.T) {
			s := start(t, func(e *testSite) { tt.route(&e.Routes[0]) })
			counting(s, body("page"))
			if resp, _ := get(t, s.url+"/"); strings.Join(resp.Header.Values("Vary"), ", ") != tt.want {
				t.Errorf("got Vary %q, want %q", resp.Header.Values("Vary"), tt.want)
			}
		})
	}
}

// TestEmptyCookieIsNotMissing: the two reach load() differently, so they are two entries.
func TestEmptyCookieIsNotMissing(t *testing.T) {
	s := start(t, func(e *testSite) { cached(e); e.Routes[0].Variants = []string{"cookie:currency"} })
	calls := counting(s, body("page"))
	for _, h := range []map[string]string{nil, {"Cookie": "currency="}, nil, {"Cookie": "currency="}} {
		getWith(t, s.url+"/", h)
	}
	if calls.Load() != 2 {
		t.Errorf("got %d renders for a missing and an empty cookie, twice each; want 2", calls.Load())
	}
	var variants []map[string]string
	for range 2 {
		variants = append(variants, (<-s.renderer.got).Variants)
	}
	if _, has := variants[0]["cookie:currency"]; has {
		t.Errorf("a request without the cookie sent it: %v", variants[0])
	}
	if v, has := variants[1]["cookie:currency"]; !has || v != "" {
		t.Errorf("a request with an empty cookie sent %v", variants[1])
	}
}

// TestPurgeCoversRendersInFlight: a render that began before a purge stores nothing after
// it, and requests arriving after the purge do not wait for it.
func TestPurgeCoversRendersInFlight(t *testing.T) {
	s := start(t, cached)
	release := make(chan struct{})
	calls := counting(s, func(n int64) (*ssrv1.RenderResponse, error) {
		if n == 1 {
			<-release
		}
		return body(fmt.Sprintf("version-%d", n))(n)
	})
	first := make(chan string)
	go func() { _, b := get(t, s.url+"/"); first <- b }()
	poll.Until(t, "the first render to start", func() bool { return calls.Load() == 1 })
	if n := s.cache.PurgeIf(func(e *htmlcache.Entry) bool { return strings.HasPrefix(e.Path, "/") }); n != 0 {
		t.Fatalf("purged %d entries from an empty cache", n)
	}
	// Arriving after the purge: a render of its own, not the one that began before.
	if _, b := get(t, s.url+"/"); !strings.Contains(b, "version-2") {
		t.Errorf("a request after the purge got the render that began before it")
	}
	close(release)
	if b := <-first; !strings.Contains(b, "version-1") {
		t.Errorf("the request that started the old render did not get it")
	}
	poll.Until(t, "the old render to finish", func() bool { return testutilCount(s, "edge_renders_in_flight") == 0 })
	if resp, b := get(t, s.url+"/"); !strings.Contains(b, "version-2") {
		t.Errorf("after the purge the cache serves %q (Cache-Status %q): the old render was stored", b[:40], resp.Header.Get("Cache-Status"))
	}
}

// TestTooLargeToStoreLeavesAMarker: a document over the cache's entry bound is not compressed
// and stored in vain on every miss; a marker lets the next requests render side by side.
func TestTooLargeToStoreLeavesAMarker(t *testing.T) {
	s := start(t, func(e *testSite) { cached(e); e.MaxPageBytes = 4 << 20; e.CacheMaxEntryBytes = 1 << 20 })
	calls := counting(s, func(int64) (*ssrv1.RenderResponse, error) {
		return &ssrv1.RenderResponse{Status: 200, Html: make([]byte, 3<<19)}, nil
	})
	resp, b := get(t, s.url+"/")
	if resp.StatusCode != 200 || len(b) < 3<<19 || resp.Header.Get("X-SSR-Fallback") != "" {
		t.Fatalf("the large page itself: %d, %d bytes, fallback %q", resp.StatusCode, len(b), resp.Header.Get("X-SSR-Fallback"))
	}
	if e, _ := s.cache.Get(homeKey); e == nil || !e.Pass {
		t.Fatalf("no hit-for-miss marker after a page too large to store")
	}
	if resp, _ := get(t, s.url+"/"); !strings.Contains(resp.Header.Get("Cache-Status"), "detail=uncacheable") {
		t.Errorf("second request: got Cache-Status %q, want hit-for-miss", resp.Header.Get("Cache-Status"))
	}
	if calls.Load() != 2 {
		t.Errorf("got %d renders, want 2", calls.Load())
	}
}

// TestStoredBodiesHoldNoSpareMemory: what the cache counts is what its entries hold.
func TestStoredBodiesHoldNoSpareMemory(t *testing.T) {
	s := start(t, cached)
	counting(s, body(strings.Repeat("product card ", 5000)))
	get(t, s.url+"/")
	e, _ := s.cache.Get(homeKey)
	if e == nil || len(e.Bodies) != 3 {
		t.Fatalf("got entry %+v, want three codings", e)
	}
	for coding, b := range e.Bodies {
		if cap(b) > len(b)+len(b)/8+64 {
			t.Errorf("coding %q: %d bytes held for %d", coding, cap(b), len(b))
		}
	}
	if _, bytes := s.cache.Stats(); bytes != e.Size() {
		t.Errorf("cache counts %d bytes, the entry holds %d", bytes, e.Size())
	}
}

// testutilCount sums a metric's samples on the stack's registry.
func testutilCount(s *stack, name string) int {
	families, _ := s.registry.Gather()
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return int(total)
}
