package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
)

// inFlight sends n requests for path at once and returns their responses once all are in.
func inFlight(t *testing.T, n int, url string) func() []harness.Response {
	var wg sync.WaitGroup
	out := make([]harness.Response, n)
	errs := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := harness.NoRedirects.Get(url)
			if err != nil {
				errs[i] = err.Error()
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				errs[i] = err.Error()
			}
			out[i] = harness.Response{Response: resp, Text: string(body)}
		}()
	}
	return func() []harness.Response {
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
func renderersReceived(t *testing.T, renderer *harness.Process) float64 {
	samples := scrape(t, renderer.HTTPURL("/metrics"))
	return sum(samples, "renderer_renders_total") + sum(samples, "renderer_renders_in_flight")
}

// atRenderer is inFlight, returning once the renderer has taken all n calls: a fixed sleep
// would flake on a slow runner, where requests still in transit at SIGTERM are rightly
// refused and the test would blame the drain.
func atRenderer(t *testing.T, renderer *harness.Process, n int, url string) func() []harness.Response {
	t.Helper()
	before := renderersReceived(t, renderer)
	wait := inFlight(t, n, url)
	poll.Until(t, fmt.Sprintf("the renderer receiving %d renders", n), func() bool {
		return renderersReceived(t, renderer) >= before+float64(n)
	})
	return wait
}

// TestEdgeDrainsOnSIGTERM: readiness turns false at once, requests already in flight are
// answered in full, and the edge exits 0.
func TestEdgeDrainsOnSIGTERM(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	renderer := startRenderer(t, socket)
	// shutdown_delay is the window in which readiness is false and the edge still answers:
	// long enough for a slow runner to ask, and half the work below, so that work is still
	// in flight when the edge stops listening.
	edge := startEdge(t, socket, "SSR_EDGE_SHUTDOWN_DELAY=1s")

	// 20 renders of 200 ms on 2 workers: about 2 s of work still queued or running at SIGTERM.
	stopWhileRendering(t, edge.Process, renderer, edge.url+"/slow?ms=200", 10*time.Second, func() {
		if r := harness.Get(t, edge.admin+"/readyz"); r.StatusCode != 503 {
			t.Errorf("readiness while draining: got %d, want 503", r.StatusCode)
		}
	})
}

// TestRendererDrainsOnSIGTERM: renders in flight when the renderer is told to stop are
// finished and served; requests after that get the client-side-render shell at once.
func TestRendererDrainsOnSIGTERM(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	renderer := startRenderer(t, socket)
	edge := startEdge(t, socket)

	stopWhileRendering(t, renderer, renderer, edge.url+"/slow?ms=100", 15*time.Second, func() {
		// At once: a request that waited on the draining renderer would fall back at the
		// render timeout, with reason "timeout".
		assertFallback(t, harness.Get(t, edge.url+"/"), 200, "renderer-unavailable")
	})
}

// stopWhileRendering sends p SIGTERM once the renderer has taken 20 requests for url, runs
// draining once p logs that it drains, then checks that each of the 20 was served in full
// and that p exits 0 within timeout.
func stopWhileRendering(t *testing.T, p, renderer *harness.Process, url string, timeout time.Duration, draining func()) {
	t.Helper()
	wait := atRenderer(t, renderer, 20, url)
	p.Signal(syscall.SIGTERM)
	p.WaitLog(map[string]string{"msg": "draining"})
	draining()
	for _, r := range wait() {
		assertSSR(t, r, 200)
	}
	if code := p.WaitExit(timeout); code != 0 {
		t.Errorf("%s exited %d after SIGTERM, want 0", p.Name, code)
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
	others := make([]harness.Response, 0, 30)
	for range 30 {
		others = append(others, harness.Get(t, edge.url+"/products/3"))
	}
	assertFallback(t, oom()[0], 200, "render-error")
	for i, r := range others {
		if r.Header.Get("X-SSR-Fallback") != "" {
			t.Errorf("render %d of another page during the OOM fell back: %q", i+1, r.Header.Get("X-SSR-Fallback"))
		}
	}
	renderer.WaitLog(map[string]string{"code": "RENDER_ERR_WORKER_OOM"})

	poll.Until(t, "the pool back to full strength after the OOM", func() bool {
		return harness.Get(t, renderer.HTTPURL("/readyz")).StatusCode == 200
	})
	assertSSR(t, harness.Get(t, edge.url+"/"), 200)
}

// TestOverloadWithdrawsRendersNobodyWaitsFor: 8 uncacheable renders of 400 ms on 2 workers.
// At the 150 ms render timeout every request gets the shell and the edge cancels its call:
// the renderer drops those still queued and aborts those under way, and no worker is
// terminated. Without the withdrawal the pool would spend its time on pages nobody receives.
func TestOverloadWithdrawsRendersNobodyWaitsFor(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	renderer := startRenderer(t, socket)
	edge := startEdge(t, socket)
	metrics := renderer.HTTPURL("/metrics")
	sleepRenders := func(outcome string) float64 {
		return sum(scrape(t, metrics), "renderer_renders_total", `page="sleep"`, `outcome="`+outcome+`"`)
	}

	for _, r := range inFlight(t, 8, edge.url+"/sleep?ms=400")() {
		assertFallback(t, r, 200, "timeout")
	}
	poll.Until(t, "8 renders withdrawn or finished for nobody", func() bool {
		return sleepRenders("RENDER_ERR_CANCELLED") >= 8
	})
	if n := sleepRenders("ok"); n != 0 {
		t.Errorf("%v renders were counted as served to a caller that had gone", n)
	}
	if n := sum(scrape(t, metrics), "renderer_worker_exits_total"); n != 0 {
		t.Errorf("%v workers were terminated; a caller going away must never cost one", n)
	}
}

// TestUnknownPageKeepsTheEdgeUnready: a route whose page the renderer's bundle lacks (a
// typo) keeps the edge's readiness false, naming the page, and its requests answer 500,
// never 200; the other routes serve.
func TestUnknownPageKeepsTheEdgeUnready(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	startRenderer(t, socket)
	config := filepath.Join(t.TempDir(), "ssr.yaml")
	routes := "edge:\n  routes:\n    - {pattern: \"GET /{$}\", page: home}\n    - {pattern: \"GET /typo\", page: hoem}\n"
	if err := os.WriteFile(config, []byte(routes), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(edgeBinary, "--config", config)
	cmd.Env = append(os.Environ(), "SSR_EDGE_LISTEN=127.0.0.1:0", "SSR_EDGE_ADMIN_LISTEN=127.0.0.1:0",
		"SSR_EDGE_ASSETS_DIR="+assetsDir(), "SSR_RENDERER_GRPC_ADDRESS=unix://"+socket)
	edge := harness.Start(t, "edge", cmd)
	public, admin := "http://"+edge.Address("public"), "http://"+edge.Address("admin")

	var ready harness.Response
	poll.Until(t, "readiness to name the missing page", func() bool {
		ready = harness.Get(t, admin+"/readyz")
		return strings.Contains(ready.Text, `"hoem"`)
	})
	if ready.StatusCode != 503 || !strings.Contains(ready.Text, "GET /typo") {
		t.Errorf("/readyz: got %d %q, want 503 naming the page and its route", ready.StatusCode, ready.Text)
	}
	edge.WaitLog(map[string]string{"level": "ERROR", "page": "hoem"})
	if r := harness.Get(t, public+"/typo"); r.StatusCode != 500 || r.Header.Get("X-SSR-Fallback") != "unknown-page" {
		t.Errorf("/typo: got %d %q, want 500 unknown-page", r.StatusCode, r.Header.Get("X-SSR-Fallback"))
	}
	if r := harness.Get(t, public+"/"); r.StatusCode != 200 || r.Header.Get("X-SSR-Fallback") != "" {
		t.Errorf("/: got %d %q, want the rendered home page", r.StatusCode, r.Header.Get("X-SSR-Fallback"))
	}
}
