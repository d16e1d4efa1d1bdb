package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
)

// TestCookieReachesOneClient: 20 first requests to a cached route whose page sets a fresh
// session cookie each coalesce on one render; each client must still get a cookie of its own.
func TestCookieReachesOneClient(t *testing.T) {
	_, edge := startStack(t)

	const clients = 20
	cookies := make([]string, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The route waits up to 5 s: time for 20 renders of 50 ms on two workers, so
			// every client gets a page, and none may get another's cookie.
			r := harness.Get(t, edge.url+"/cached/cookie?ms=50")
			cookies[i] = r.Header.Get("Set-Cookie")
		}()
	}
	wg.Wait()
	seen := map[string]int{}
	for _, c := range cookies {
		if c != "" {
			seen[c]++
		}
	}
	for c, n := range seen {
		if n > 1 {
			t.Errorf("one Set-Cookie reached %d clients: %s", n, c)
		}
	}
	if len(seen) != clients {
		t.Errorf("%d distinct cookies for %d clients, want one each", len(seen), clients)
	}
	metrics := scrape(t, edge.admin+"/metrics")
	if n := sum(metrics, "edge_cache_private_rerenders_total"); n == 0 {
		t.Errorf("no waiter rendered for itself (edge_cache_private_rerenders_total 0): the requests did not coalesce, so the test proved nothing")
	}
}

// TestEscapedSlashCannotPoisonAnotherRoute: /items/7%2Freviews is the item "7/reviews"; it
// must not be stored where /items/7/reviews, another route's page, is looked up.
func TestEscapedSlashCannotPoisonAnotherRoute(t *testing.T) {
	_, edge := startStack(t)

	poison := harness.Get(t, edge.url+"/items/7%2Freviews")
	assertSSR(t, poison, 200)
	if !strings.Contains(poison.Text, "item <!-- -->7/reviews") {
		t.Fatalf("/items/7%%2Freviews: want the item page for id 7/reviews, got %.300q", poison.Text)
	}
	victim := harness.Get(t, edge.url+"/items/7/reviews")
	assertSSR(t, victim, 200)
	if !strings.Contains(victim.Text, "reviews of <!-- -->7") || strings.HasPrefix(cacheStatus(victim), "sidecar-ssr; hit") {
		t.Errorf("/items/7/reviews after /items/7%%2Freviews: Cache-Status %q, body %.300q; want the reviews page, rendered", cacheStatus(victim), victim.Text)
	}
	// Each is cached under its own key.
	for path, want := range map[string]string{"/items/7%2Freviews": "item <!-- -->7/reviews", "/items/7/reviews": "reviews of <!-- -->7"} {
		if r := harness.Get(t, edge.url+path); !strings.HasPrefix(cacheStatus(r), "sidecar-ssr; hit") || !strings.Contains(r.Text, want) {
			t.Errorf("%s again: Cache-Status %q, want a hit on its own page", path, cacheStatus(r))
		}
	}
}

// TestPageErrorServesTheStaleCopy: the page answers 503 while its backend is down. Inside
// stale-if-error clients keep the stored copy, the copy survives the failed renders, and
// once the page recovers the next render is stored at once.
func TestPageErrorServesTheStaleCopy(t *testing.T) {
	down := filepath.Join(t.TempDir(), "down")
	_, edge := startStack(t, "SSR_FIXTURE_DOWN_FILE="+down)

	stored := harness.Get(t, edge.url+"/cached/flaky")
	assertSSR(t, stored, 200)
	if !strings.Contains(stored.Text, "backend up") {
		t.Fatalf("first render: %.300q", stored.Text)
	}
	if err := os.WriteFile(down, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	edge.advance(t, 90*time.Second) // past the 1m ttl, inside the 10m stale-if-error
	for i := range 2 {
		r := harness.Get(t, edge.url+"/cached/flaky")
		if r.StatusCode != 200 || r.Text != stored.Text || !strings.Contains(cacheStatus(r), "fwd=stale; fwd-status=503") ||
			!strings.HasSuffix(cacheStatus(r), "detail=server-error") {
			t.Errorf("request %d with the backend down: got %d, Cache-Status %q, the stored copy: %v", i+1, r.StatusCode, cacheStatus(r), r.Text == stored.Text)
		}
	}
	os.Remove(down)
	recovered := harness.Get(t, edge.url+"/cached/flaky")
	if !strings.HasSuffix(cacheStatus(recovered), "stored") {
		t.Errorf("the page recovered: got Cache-Status %q, want a stored render", cacheStatus(recovered))
	}
	if r := harness.Get(t, edge.url+"/cached/flaky"); !strings.HasPrefix(cacheStatus(r), "sidecar-ssr; hit") {
		t.Errorf("after recovery: got Cache-Status %q, want a hit", cacheStatus(r))
	}
}

// TestPoisonPillIsQuarantined: a URL whose render never ends costs a worker at every hard
// deadline. After two such deaths the renderer refuses it at once, the edge serves the CSR
// shell for it without a render, and other pages are untouched.
func TestPoisonPillIsQuarantined(t *testing.T) {
	renderer, edge := startStack(t)
	quarantineLoops(t, renderer, edge)

	assertFallback(t, harness.Get(t, edge.url+"/loops"), 200, "quarantined")
	// Refused before the pool: no render of it is queued or running, so none can kill a
	// worker later. (The second looping render had left the pool before the renderer logged
	// the quarantine, and nothing else was sent.)
	metrics := scrape(t, renderer.HTTPURL("/metrics"))
	if n := sum(metrics, "renderer_renders_in_flight"); n != 0 {
		t.Errorf("%v renders in flight after the refusal, want 0: the quarantined URL went to the pool", n)
	}
	if n := sum(metrics, "renderer_worker_exits_total", `reason="deadline"`); n != 2 {
		t.Errorf("%v workers terminated, want 2: the quarantined URL was rendered", n)
	}
	if n := sum(metrics, "renderer_quarantine_refusals_total", `page="loops"`); n != 1 {
		t.Errorf("got %v quarantine refusals for loops, want 1", n)
	}
	if n := sum(metrics, "renderer_renders_total", `page="loops"`, `outcome="RENDER_ERR_QUARANTINED"`); n != 1 {
		t.Errorf("got %v quarantined renders in renderer_renders_total, want 1", n)
	}
	assertSSR(t, harness.Get(t, edge.url+"/products/3"), 200)
}

// TestCodeThatRunsOnAfterItsCallerLeft: a page whose code goes on after the edge gave up on
// it (the render timeout on an uncached route; the hard timeout is minutes away) costs its
// worker, never the site: a loop already running when the caller left (the probe finds its
// worker pinned), a loop that starts after its call ended (the renderer's watch), and a
// load() computing in slices (its worker counts them). Each request gets its fallback, never
// a 5xx; its worker is ended; the page beside it renders after each.
func TestCodeThatRunsOnAfterItsCallerLeft(t *testing.T) {
	renderer, edge := startStack(t)
	exits := func(reason string) float64 {
		return sum(scrape(t, renderer.HTTPURL("/metrics")), "renderer_worker_exits_total", `reason="`+reason+`"`)
	}
	for _, tc := range []struct {
		path, exit string
	}{
		{"/resumes-then-loops?way=timeout", "deadline"},
		{"/resumes-then-loops?way=immediate&after=300", "runs-on"},
		{"/slices", "runs-on"},
	} {
		before := exits(tc.exit)
		assertFallback(t, harness.Get(t, edge.url+tc.path), 200, "timeout")
		poll.Until(t, tc.path+"'s worker to be ended ("+tc.exit+")", func() bool { return exits(tc.exit) == before+1 })
		assertSSR(t, harness.Get(t, edge.url+"/products/3"), 200)
	}
	metrics := scrape(t, renderer.HTTPURL("/metrics"))
	if n := sum(metrics, "renderer_runs_on_total", `page="slices"`); n != 1 {
		t.Errorf("renderer_runs_on_total{page=\"slices\"} = %v, want 1", n)
	}
	if n := sum(metrics, "renderer_runs_on_total", `page="resumes-then-loops"`); n != 1 {
		t.Errorf("renderer_runs_on_total{page=\"resumes-then-loops\"} = %v, want 1", n)
	}
	renderer.WaitLog(map[string]string{"msg": "a render ran on after its abort: its worker is ended", "page": "slices"})
}

// quarantineLoops has /loops kill two workers, and waits until the renderer quarantines it.
// Each request falls back at the 100 ms render timeout; the edge withdraws the call, the
// render runs on to the 600 ms hard timeout, and the renderer terminates its worker.
func quarantineLoops(t *testing.T, renderer *harness.Process, edge *edgeProcess) {
	t.Helper()
	exits := func() float64 {
		return sum(scrape(t, renderer.HTTPURL("/metrics")), "renderer_worker_exits_total", `reason="deadline"`)
	}
	for i := range 2 {
		assertFallback(t, harness.Get(t, edge.url+"/loops"), 200, "timeout")
		poll.Until(t, "the looping render's worker to be terminated", func() bool { return exits() == float64(i+1) })
	}
	renderer.WaitLog(map[string]string{"msg": "render quarantined", "url": "/loops"})
}

// TestOversizedPage: a page over max_page_mb is refused wherever the smaller cap is, in the
// renderer's worker (RENDER_ERR_PAGE_TOO_LARGE, before it crosses the socket) or on the
// edge's side of the socket (grpc-go's receive limit); either way the edge serves the
// client-side-render shell as page-too-large, no worker dies, and the next page renders.
func TestOversizedPage(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		rendererEnv, edgeEnv []string
		rendererOutcome      string
	}{
		{"the renderer's cap", []string{"SSR_RENDERER_MAX_PAGE_MB=1"}, nil, "RENDER_ERR_PAGE_TOO_LARGE"},
		{"the edge's cap", nil, []string{"SSR_EDGE_MAX_PAGE_MB=1"}, "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			socket := filepath.Join(t.TempDir(), "renderer.sock")
			renderer := startRenderer(t, socket, tc.rendererEnv...)
			edge := startEdge(t, socket, tc.edgeEnv...)

			assertFallback(t, harness.Get(t, edge.url+"/huge?mb=2"), 200, "page-too-large")
			assertSSR(t, harness.Get(t, edge.url+"/huge?mb=0.5"), 200)
			metrics := scrape(t, renderer.HTTPURL("/metrics"))
			if n := sum(metrics, "renderer_renders_total", `page="huge"`, `outcome="`+tc.rendererOutcome+`"`); n < 1 {
				t.Errorf("no render of huge counted with outcome %s", tc.rendererOutcome)
			}
			if n := sum(metrics, "renderer_worker_exits_total"); n != 0 {
				t.Errorf("%v workers died, want none", n)
			}
		})
	}
}
