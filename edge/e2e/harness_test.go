// Package e2e runs the real edge binary and the real Node renderer, talking gRPC over a unix
// socket, and checks what HTTP clients get. `make test-e2e` builds what it needs first. The
// processes are started and watched by package harness; the Kubernetes manifests' tests are
// in package manifests.
package e2e

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
)

var (
	edgeBinary string
	grpcurl    = filepath.Join(harness.RepoRoot, "bin", "grpcurl")
)

// TestMain builds the edge with the test clock (package clock): the tests move the time
// its HTML cache judges freshness by.
func TestMain(m *testing.M) {
	harness.Main(m, &edgeBinary, []string{"testclock"}, harness.NodeBinary, grpcurl, fixtureBundle(), filepath.Join(assetsDir(), "manifest.json"))
}

func fixtureBundle() string {
	return filepath.Join(harness.RepoRoot, "renderer", "test", "fixtures", "dist", "server.js")
}
func assetsDir() string { return filepath.Join(harness.RepoRoot, "app", "dist", "client") }

// startRenderer starts the renderer on the fixture bundle, listening on socket, and waits
// until every worker has loaded the bundle.
func startRenderer(t *testing.T, socket string, env ...string) *harness.Process {
	t.Helper()
	return harness.StartRenderer(t, socket, append([]string{"SSR_RENDERER_BUNDLE=" + fixtureBundle()}, env...)...)
}

// edgeConfig routes the demo pages and the fixture's misbehaving pages; only the /cached/
// routes are cached. Their windows are minutes long: the tests move the edge's clock
// through them (edgeProcess.advance) rather than sleep, and a slow runner's seconds cannot
// move a request out of the window it was meant for. For the same reason the render timeout
// is 5 s, not 150 ms: a loaded runner's first render of "/" missed 150 ms and fell back.
// Only the routes whose tests are about the render timeout (/sleep, /cached/slow) keep 150 ms.
const edgeConfig = `
edge:
  render_timeout: 5s
  hard_timeout: 10s
  routes:
    - {pattern: "GET /{$}", page: home}
    - {pattern: "GET /products/{id}", page: product}
    # The demo's streamed page, routed as its defaults do (TestBareNodeServesTheEdgesBytes).
    - {pattern: "GET /products/{id}/reviews", page: product-reviews, stream: true}
    - {pattern: "GET /throws", page: throws}
    - {pattern: "GET /sleep", page: sleep, render_timeout: 150ms, hard_timeout: 2s}
    - {pattern: "GET /xss", page: xss}
    - {pattern: "GET /huge", page: huge}
    - {pattern: "GET /redirect", page: redirect}
    - {pattern: "GET /slow", page: sleep, render_timeout: 3s, hard_timeout: 4s}
    - {pattern: "GET /oom", page: oom, render_timeout: 4s, hard_timeout: 5s}
    - pattern: "GET /cached/products/{id}"
      page: product
      cache: {ttl: 1m, stale_while_revalidate: 1m, stale_if_error: 3m, query: []}
    - pattern: "GET /cached/slow"
      page: sleep
      render_timeout: 150ms
      hard_timeout: 2s
      cache: {ttl: 60s, query: [ms]}
    - pattern: "GET /cached/cookie"
      page: cookie
      render_timeout: 5s
      hard_timeout: 6s
      cache: {ttl: 60s, query: [ms]}
    - pattern: "GET /cached/backend"
      page: backend
      hard_timeout: 20s
      cache: {ttl: 1m, query: [port]}
    - pattern: "GET /cached/flaky"
      page: flaky
      cache: {ttl: 1m, stale_if_error: 10m, query: []}
    - {pattern: "GET /items/{id}", page: item, cache: {ttl: 60s, query: []}}
    - {pattern: "GET /items/{id}/reviews", page: reviews, cache: {ttl: 60s, query: []}}
    # Streaming (stream_test.go): the shell within a generous render_timeout (a loaded
    # runner), boundaries held back by the test, not by the clock.
    - pattern: "GET /streamed/{id}"
      page: product-reviews
      stream: true
      render_timeout: 10s
      stream_timeout: 15s
      hard_timeout: 30s
      cache: {ttl: 1m, query: []}
    - pattern: "GET /streamed-partial/{id}"
      page: product-reviews
      stream: true
      render_timeout: 1s
      stream_timeout: 1s
      hard_timeout: 30s
      cache: {ttl: 1m, query: []}
    # Partially prerendered (prerender_test.go): the fixture's page whose hole reads the
    # visitor's cookie; one that reads its value outside any hole; one whose boundary throws;
    # one with no hole.
    - pattern: "GET /prerendered/{id}"
      page: prerendered
      per_request: {visitor: "cookie:visitor"}
      render_timeout: 10s
      stream_timeout: 15s
      hard_timeout: 30s
      cache: {ttl: 1m, query: []}
    - {pattern: "GET /prerendered-outside", page: awaits, per_request: {gate: "cookie:gate"}, cache: {ttl: 1m, query: []}}
    - {pattern: "GET /prerendered-throws", page: boundary-throws, per_request: {visitor: "cookie:visitor"}, cache: {ttl: 1m, query: []}}
    - {pattern: "GET /prerendered-whole/{id}", page: item, per_request: {visitor: "cookie:visitor"}, cache: {ttl: 1m, query: []}}
    - {pattern: "GET /loops", page: loops, render_timeout: 100ms, hard_timeout: 600ms}
    # A page whose code goes on after its caller left (safety_test.go): uncached, and a hard
    # timeout beyond any test's end, so that only the caller leaving ends its render.
    - {pattern: "GET /resumes-then-loops", page: resumes-then-loops, render_timeout: 100ms, hard_timeout: 5m}
    - {pattern: "GET /slices", page: slices, render_timeout: 100ms, hard_timeout: 5m}
    # Uncached, so that each request's render is its own and is withdrawn when its client
    # leaves (waiting_test.go); the hard timeout is beyond any test's end, so that only the
    # withdrawal ends a render whose boundary is held back.
    - pattern: "GET /uncached-streamed/{id}"
      page: product-reviews
      stream: true
      render_timeout: 10s
      stream_timeout: 15s
      hard_timeout: 5m
`

// startStack starts the renderer (with rendererEnv) on a socket of its own and an edge in
// front of it.
func startStack(t *testing.T, rendererEnv ...string) (*harness.Process, *edgeProcess) {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	renderer := startRenderer(t, socket, rendererEnv...)
	return renderer, startEdge(t, socket)
}

type edgeProcess struct {
	*harness.Process
	url, admin string
}

// startEdge starts the e2e build of the edge (with the test clock) in front of the renderer
// on socket, with env added to the environment.
func startEdge(t *testing.T, socket string, env ...string) *edgeProcess {
	t.Helper()
	return startEdgeBinary(t, edgeBinary, socket, env...)
}

func startEdgeBinary(t *testing.T, binary, socket string, env ...string) *edgeProcess {
	t.Helper()
	config := filepath.Join(t.TempDir(), "ssr.yaml")
	if err := os.WriteFile(config, []byte(edgeConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "--config", config)
	cmd.Env = append(os.Environ(),
		"SSR_EDGE_LISTEN=127.0.0.1:0",
		"SSR_EDGE_ADMIN_LISTEN=127.0.0.1:0",
		"SSR_EDGE_ASSETS_DIR="+assetsDir(),
		"SSR_RENDERER_GRPC_ADDRESS=unix://"+socket,
		"SSR_EDGE_ADMIN_TOKEN="+adminToken,
	)
	cmd.Env = append(cmd.Env, env...)
	p := harness.Start(t, "edge", cmd)
	return &edgeProcess{Process: p, url: "http://" + p.Address("public"), admin: "http://" + p.Address("admin")}
}

// adminToken is the edges' admin token: no address is trusted without it, loopback included.
const adminToken = "e2e-admin-token"

// purge POSTs a purge to an edge's admin port, with the admin token, and returns its status
// and body.
func purge(t *testing.T, e *edgeProcess, query string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", e.admin+"/cache/purge?"+query, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// advance moves the edge's clock forward by d: the time its HTML cache judges freshness by
// (package clock; the endpoint is only in the test build).
func (e *edgeProcess) advance(t *testing.T, d time.Duration) {
	t.Helper()
	resp, err := http.Post(e.admin+"/testclock/advance?by="+d.String(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("moving the edge's clock by %s: got %d", d, resp.StatusCode)
	}
}
