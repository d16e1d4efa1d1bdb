package e2e

// Renders that wait for data (a Suspense boundary whose reviews the test's gate holds back)
// cost neither a worker's thread nor an edge render slot: many of them at once leave room for
// every other page, and one whose client leaves is aborted, unless others need its result.
// Each test holds its renders on gates (stream_test.go) and waits on events, never the clock.

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
)

// rendererThreads is the harness's SSR_RENDERER_THREADS.
const rendererThreads = 2

// TestWaitingRendersLeaveRoomForOthers: with 20 × threads streamed renders pending on their
// gates, a page that does not stream is still rendered on the server, and another streamed
// page gets its shell. The edge has fewer render slots than renders waiting: a streamed
// render gives its slot back at the shell.
func TestWaitingRendersLeaveRoomForOthers(t *testing.T) {
	const pending = 20 * rendererThreads
	g, gateEnv := startGates(t)
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	renderer := startRenderer(t, socket, gateEnv)
	edge := startEdge(t, socket, fmt.Sprintf("SSR_EDGE_RENDER_SLOTS=%d", pending/5))

	// One after another, each once the last has its shell: an edge slot is held up to the
	// shell, and this test is about the renders that wait after it.
	held := make([]*reading, pending)
	for i := range held {
		held[i] = open(t, fmt.Sprintf("%s/streamed/%d", edge.url, 500+i), nil)
		held[i].until(t, shellMark)
	}

	assertSSR(t, harness.Get(t, edge.url+"/products/7"), 200)
	other := open(t, edge.url+"/streamed/600", nil)
	other.until(t, shellMark)
	if got := other.resp.Header.Get("Cache-Status"); !strings.Contains(got, streamedMark) {
		t.Errorf("the other streamed page: got Cache-Status %q, want it streamed", got)
	}

	// Nothing lost: every render waiting completes once its data comes.
	g.open("600")
	for i := range held {
		g.open(fmt.Sprint(500 + i))
	}
	for i, r := range append(held, other) {
		if body := r.rest(t); !strings.Contains(body, reviewsMark) || strings.Contains(body, abortedMark) {
			t.Errorf("streamed render %d: the document lacks its reviews or gave them up:\n%.2000s", i, body)
		}
	}
	if n := sum(scrape(t, renderer.HTTPURL("/metrics")), "renderer_worker_exits_total"); n != 0 {
		t.Errorf("%v workers exited; renders that wait must never cost one", n)
	}
}

// TestBurstOfAbandonedSlowPages: 50 clients ask at once for an uncached streamed page whose
// data does not come, and leave once they have its shell. The next requests are rendered on
// the server at once: the abandoned renders were aborted when their clients left, and hold
// no worker until their (far) hard timeout, when their workers would be terminated.
func TestBurstOfAbandonedSlowPages(t *testing.T) {
	const burst = 50
	g, gateEnv := startGates(t)
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	renderer := startRenderer(t, socket, gateEnv)
	edge := startEdge(t, socket)
	metrics := renderer.HTTPURL("/metrics")

	var wg sync.WaitGroup
	errs := make(chan error, burst)
	for i := range burst {
		wg.Go(func() {
			resp, err := streamClient.Get(edge.url + "/uncached-streamed/700")
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close() // the client leaves, its data still held back
			if err := (&reading{resp: resp, body: resp.Body}).wait(shellMark); err != nil {
				errs <- fmt.Errorf("client %d (X-SSR-Fallback %q): %w", i, resp.Header.Get("X-SSR-Fallback"), err)
			}
		})
	}
	wg.Wait()
	close(errs)
	if len(errs) > 0 {
		t.Errorf("%d of %d clients got no shell; the first: %v", len(errs), burst, <-errs)
	}

	// Within the routes' render timeout (render_timeout), far inside the burst's hard one.
	assertSSR(t, harness.Get(t, edge.url+"/"), 200)
	assertSSR(t, harness.Get(t, edge.url+"/products/8"), 200)
	g.open("701")
	streamed := harness.Get(t, edge.url+"/products/701/reviews")
	assertSSR(t, streamed, 200)
	if !strings.Contains(streamed.Text, reviewsMark) {
		t.Errorf("the streamed page after the burst lacks its reviews:\n%.2000s", streamed.Text)
	}

	poll.Until(t, fmt.Sprintf("the renderer ending the %d abandoned renders", burst), func() bool {
		return sum(scrape(t, metrics), "renderer_renders_total", `page="product-reviews"`, `outcome="RENDER_ERR_CANCELLED"`) >= burst
	})
	if n := sum(scrape(t, metrics), "renderer_worker_exits_total", `reason="deadline"`); n != 0 {
		t.Errorf("%v workers exited for a deadline; renders that only waited must never cost one", n)
	}
	g.open("700")
}

// TestClientThatLeavesAbortsOnlyItsOwnRender: a client that leaves an uncached page's render
// aborts it in the renderer (nobody else can have its result); one that leaves a cacheable
// page's render, alone or with others coalesced onto it, does not: that render completes
// and is stored, and its coalesced request gets the whole page.
func TestClientThatLeavesAbortsOnlyItsOwnRender(t *testing.T) {
	g, gateEnv := startGates(t)
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	renderer := startRenderer(t, socket, gateEnv)
	edge := startEdge(t, socket)
	rendererMetrics, edgeMetrics := renderer.HTTPURL("/metrics"), edge.admin+"/metrics"
	renders := func(outcome string) float64 {
		return sum(scrape(t, rendererMetrics), "renderer_renders_total", `page="product-reviews"`, `outcome="`+outcome+`"`)
	}
	// answered counts the requests the edge has finished with on route: their handler has
	// returned, so what the edge does when its client leaves is done.
	answered := func(route string) float64 {
		return sum(scrape(t, edgeMetrics), "edge_requests_total", `route="`+route+`"`)
	}
	leave := func(r *reading, route string, before float64) {
		t.Helper()
		r.resp.Body.Close()
		poll.Until(t, "the edge seeing its client leave", func() bool { return answered(route) > before })
	}

	t.Run("uncached: aborted", func(t *testing.T) {
		before := answered("GET /uncached-streamed/{id}")
		alone := open(t, edge.url+"/uncached-streamed/710", nil)
		alone.until(t, shellMark)
		leave(alone, "GET /uncached-streamed/{id}", before)
		// Far before its hard timeout: only the abort ends it, its reviews still held back.
		poll.Until(t, "the renderer aborting the render", func() bool {
			return renders("RENDER_ERR_CANCELLED") >= 1
		})
		g.open("710")
	})

	const route = "GET /streamed/{id}"
	t.Run("cacheable, coalesced: completes for the request that joined, and is stored", func(t *testing.T) {
		url := edge.url + "/streamed/711"
		before := answered(route)
		leader := open(t, url, nil)
		leader.until(t, shellMark)
		follower := open(t, url, nil)
		follower.until(t, shellMark)
		if got := follower.resp.Header.Get("Cache-Status"); !strings.Contains(got, "collapsed") {
			t.Fatalf("got Cache-Status %q for the second request, want it coalesced", got)
		}
		leave(leader, route, before)
		g.open("711")
		if body := follower.rest(t); !strings.Contains(body, reviewsMark) || strings.Contains(body, abortedMark) {
			t.Errorf("the coalesced request lacks the reviews, or they were given up:\n%.2000s", body)
		}
		waitForHit(t, url)
	})

	t.Run("cacheable, alone: completes and is stored", func(t *testing.T) {
		url := edge.url + "/streamed/712"
		before := answered(route)
		alone := open(t, url, nil)
		alone.until(t, shellMark)
		leave(alone, route, before)
		g.open("712")
		waitForHit(t, url)
	})

	if n := renders("RENDER_ERR_CANCELLED"); n != 1 {
		t.Errorf("%v renders of the page were cancelled, want 1: the uncached one", n)
	}
	if n := sum(scrape(t, rendererMetrics), "renderer_worker_exits_total"); n != 0 {
		t.Errorf("%v workers exited; an abort must cost none", n)
	}
}

// waitForHit waits until url is served from the cache, whole.
func waitForHit(t *testing.T, url string) {
	t.Helper()
	var hit harness.Response
	poll.Until(t, "the page stored", func() bool {
		hit = harness.Get(t, url)
		return strings.Contains(hit.Header.Get("Cache-Status"), "hit")
	})
	if hit.StatusCode != http.StatusOK || !strings.Contains(hit.Text, reviewsMark) || strings.Contains(hit.Text, abortedMark) {
		t.Errorf("got %d, the stored document not the complete one:\n%.2000s", hit.StatusCode, hit.Text)
	}
}
