package e2e

import (
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// inFlight sends n requests for path at once and returns their responses once all are in.
func inFlight(t *testing.T, n int, url string) func() []response {
	var wg sync.WaitGroup
	out := make([]response, n)
	errs := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := noRedirects.Get(url)
			if err != nil {
				errs[i] = err.Error()
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				errs[i] = err.Error()
			}
			out[i] = response{Response: resp, body: string(body)}
		}()
	}
	return func() []response {
		wg.Wait()
		for i, e := range errs {
			if e != "" {
				t.Fatalf("request %d of %d failed: %s", i+1, n, e)
			}
		}
		return out
	}
}

// renderersReceived is every render call the renderer has taken: answered plus in flight.
func renderersReceived(t *testing.T, renderer *process) float64 {
	samples := scrape(t, renderer.httpURL("/metrics"))
	return sum(samples, "renderer_renders_total") + sum(samples, "renderer_renders_in_flight")
}

// untilReceived waits until the renderer has taken n more calls than before: a fixed
// sleep would flake on a slow runner, where requests still in transit at SIGTERM are
// rightly refused and the test would blame the drain.
func untilReceived(t *testing.T, renderer *process, before float64, n int) {
	t.Helper()
	waitUntil(t, 10*time.Second, fmt.Sprintf("the renderer receiving %d renders", n), func() bool {
		return renderersReceived(t, renderer) >= before+float64(n)
	})
}

// TestEdgeDrainsOnSIGTERM: readiness turns false at once, requests already in flight are
// answered in full, and the edge exits 0.
func TestEdgeDrainsOnSIGTERM(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	renderer := startRenderer(t, socket)
	edge := startEdge(t, socket, "SSR_EDGE_SHUTDOWN_DELAY=300ms")

	// 20 renders of 100 ms on 2 workers: about 1 s of work still queued or running at SIGTERM.
	before := renderersReceived(t, renderer)
	wait := inFlight(t, 20, edge.url+"/slow?ms=100")
	untilReceived(t, renderer, before, 20)
	edge.signal(syscall.SIGTERM)
	time.Sleep(50 * time.Millisecond)
	if r := get(t, edge.admin+"/readyz"); r.StatusCode != 503 {
		t.Errorf("readiness while draining: got %d, want 503", r.StatusCode)
	}
	for _, r := range wait() {
		assertSSR(t, r, 200)
	}
	if code := edge.waitExit(10 * time.Second); code != 0 {
		t.Errorf("edge exited %d, want 0", code)
	}
}

// TestRendererDrainsOnSIGTERM: renders in flight when the renderer is told to stop are
// finished and served; requests after that get the client-side-render shell at once.
func TestRendererDrainsOnSIGTERM(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	renderer := startRenderer(t, socket)
	edge := startEdge(t, socket)

	before := renderersReceived(t, renderer)
	wait := inFlight(t, 20, edge.url+"/slow?ms=100")
	untilReceived(t, renderer, before, 20)
	renderer.signal(syscall.SIGTERM)
	renderer.waitLog(map[string]string{"msg": "draining"}, 5*time.Second)

	r := get(t, edge.url+"/")
	assertFallback(t, r, 200, "renderer-unavailable")
	if r.took > 150*time.Millisecond+time.Second/2 {
		t.Errorf("fallback while the renderer drains took %s, want it at once", r.took)
	}
	for _, r := range wait() {
		assertSSR(t, r, 200)
	}
	if code := renderer.waitExit(15 * time.Second); code != 0 {
		t.Errorf("renderer exited %d, want 0", code)
	}
}

// TestHeapCapIsolatesOutOfMemory: a page that allocates without bound fails only its own
// render (CSR shell at the edge); renders of other pages meanwhile succeed, and the pool is
// back to full strength afterwards.
func TestHeapCapIsolatesOutOfMemory(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	renderer := startRenderer(t, socket, "SSR_RENDERER_MAX_OLD_GENERATION_MB=32", "SSR_RENDERER_MAX_YOUNG_GENERATION_MB=6")
	edge := startEdge(t, socket)

	oom := inFlight(t, 1, edge.url+"/oom")
	others := make([]response, 0, 30)
	for range 30 {
		others = append(others, get(t, edge.url+"/products/3"))
	}
	assertFallback(t, oom()[0], 200, "render-error")
	for i, r := range others {
		if r.Header.Get("X-SSR-Fallback") != "" {
			t.Errorf("render %d of another page during the OOM fell back: %q", i+1, r.Header.Get("X-SSR-Fallback"))
		}
	}
	renderer.waitLog(map[string]string{"code": "RENDER_ERR_WORKER_OOM"}, 5*time.Second)

	waitUntil(t, 10*time.Second, "the pool back to full strength after the OOM", func() bool {
		return get(t, renderer.httpURL("/readyz")).StatusCode == 200
	})
	assertSSR(t, get(t, edge.url+"/"), 200)
}

// TestOverloadWithdrawsRendersNobodyWaitsFor: 8 uncacheable renders of 400 ms on 2 workers.
// At the 150 ms soft deadline every request gets the shell and the edge cancels its call:
// the 6 still queued are dropped, the 2 running finish, and no worker is terminated.
// Without the withdrawal the pool would spend 1.6 s rendering pages nobody receives.
func TestOverloadWithdrawsRendersNobodyWaitsFor(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	renderer := startRenderer(t, socket)
	edge := startEdge(t, socket)
	metrics := renderer.httpURL("/metrics")
	sleepRenders := func(outcome string) float64 {
		return sum(scrape(t, metrics), "renderer_renders_total", `page="sleep"`, `outcome="`+outcome+`"`)
	}

	for _, r := range inFlight(t, 8, edge.url+"/sleep?ms=400")() {
		assertFallback(t, r, 200, "timeout")
	}
	waitUntil(t, 10*time.Second, "8 renders withdrawn or finished for nobody", func() bool {
		return sleepRenders("RENDER_ERR_CANCELLED") >= 8
	})
	if n := sleepRenders("ok"); n != 0 {
		t.Errorf("%v renders were counted as served to a caller that had gone", n)
	}
	if n := sum(scrape(t, metrics), "renderer_worker_exits_total"); n != 0 {
		t.Errorf("%v workers were terminated; a caller going away must never cost one", n)
	}
}
