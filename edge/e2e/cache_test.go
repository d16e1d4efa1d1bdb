package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
)

func cacheStatus(r harness.Response) string { return r.Header.Get("Cache-Status") }

func TestCacheHitThenStaleWhileRevalidate(t *testing.T) {
	_, edge := startStack(t)

	first := harness.Get(t, edge.url+"/cached/products/5")
	assertSSR(t, first, 200)
	if !strings.Contains(cacheStatus(first), "fwd=miss") || !strings.Contains(cacheStatus(first), "stored") {
		t.Errorf("first request: got Cache-Status %q, want a stored miss", cacheStatus(first))
	}
	second := harness.Get(t, edge.url+"/cached/products/5?utm_source=newsletter")
	assertSSR(t, second, 200)
	if !strings.HasPrefix(cacheStatus(second), "sidecar-ssr; hit; ttl=") || second.Text != first.Text {
		t.Errorf("second request (tracking parameter ignored): got Cache-Status %q, same body %v", cacheStatus(second), second.Text == first.Text)
	}

	edge.advance(t, 90*time.Second) // past the 1m ttl, inside the 1m stale-while-revalidate
	stale := harness.Get(t, edge.url+"/cached/products/5")
	assertSSR(t, stale, 200)
	// A hit (not fwd=) with a negative ttl: served from the cache without waiting for a render.
	if !strings.HasPrefix(cacheStatus(stale), "sidecar-ssr; hit; ttl=-") {
		t.Errorf("stale request: got Cache-Status %q, want a stale hit served at once", cacheStatus(stale))
	}
	poll.Until(t, "a fresh copy stored by the background refresh after a stale hit", func() bool {
		status := cacheStatus(harness.Get(t, edge.url+"/cached/products/5"))
		return strings.HasPrefix(status, "sidecar-ssr; hit; ttl=") && !strings.Contains(status, "ttl=-")
	})
	metrics := scrape(t, edge.admin+"/metrics")
	if n := sum(metrics, "edge_cache_background_refreshes_total", `route="GET /cached/products/{id}"`); n != 1 {
		t.Errorf("got %v background refreshes, want exactly 1", n)
	}
	if n := sum(metrics, "edge_cache_requests_total", `result="hit"`); n < 2 {
		t.Errorf("got %v cache hits in metrics, want at least 2", n)
	}
}

func TestStaleIfErrorWhileRendererIsDown(t *testing.T) {
	renderer, edge := startStack(t)
	stored := harness.Get(t, edge.url+"/cached/products/8")
	assertSSR(t, stored, 200)

	renderer.Kill()
	edge.advance(t, 150*time.Second) // past ttl + swr (2m), inside stale-if-error (ttl + 3m)
	r := harness.Get(t, edge.url+"/cached/products/8")
	if r.StatusCode != 200 || r.Text != stored.Text || !strings.Contains(cacheStatus(r), "fwd=stale") ||
		!strings.Contains(cacheStatus(r), "detail=renderer-unavailable") {
		t.Errorf("inside stale-if-error: got %d Cache-Status %q, same body %v; want the stale copy", r.StatusCode, cacheStatus(r), r.Text == stored.Text)
	}

	edge.advance(t, 2*time.Minute) // past stale-if-error
	assertFallback(t, harness.Get(t, edge.url+"/cached/products/8"), 200, "renderer-unavailable")
}

func TestSlowPageFillsTheCacheAfterFallingBack(t *testing.T) {
	_, edge := startStack(t)

	// "timeout" is the render timeout's reason: the request did not wait for the render.
	assertFallback(t, harness.Get(t, edge.url+"/cached/slow?ms=400"), 200, "timeout")
	// The 400 ms render goes on in the background and is stored: a later request is a hit.
	// Until it lands, requests join that render (collapsed) and fall back again.
	var second harness.Response
	poll.Until(t, "a hit on the page the late render stored", func() bool {
		second = harness.Get(t, edge.url+"/cached/slow?ms=400")
		return strings.HasPrefix(cacheStatus(second), "sidecar-ssr; hit")
	})
	assertSSR(t, second, 200)
}

func TestPurgeOnAdminPort(t *testing.T) {
	_, edge := startStack(t)
	harness.Get(t, edge.url+"/cached/products/3")
	if code, body := purge(t, edge, "prefix=/cached/products/"); code != 200 {
		t.Fatalf("purge: got %d %s", code, body)
	}
	if r := harness.Get(t, edge.url+"/cached/products/3"); !strings.Contains(cacheStatus(r), "fwd=miss") {
		t.Errorf("after purge: got Cache-Status %q, want a miss", cacheStatus(r))
	}
}
