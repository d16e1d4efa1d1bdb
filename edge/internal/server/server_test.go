package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/renderclient"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/renderclient/rendertest"
)

// testSite is what a test's stack is made of: the site's settings (Options, its parts
// added by start), its routes, and the sizes of the renderer's client and of the cache.
type testSite struct {
	Options
	Routes                                          []Route
	MaxPageBytes, CacheMaxBytes, CacheMaxEntryBytes int
}

// defaultSite has the public package's defaults and the demo's three routes.
func defaultSite() testSite {
	return testSite{
		Options: Options{
			Timeouts:    Timeouts{Render: 150 * time.Millisecond, Hard: 2 * time.Second, Stream: time.Second},
			NotFoundTTL: 10 * time.Second, PassTTL: 10 * time.Second, TTLJitter: 0.1,
			RenderSlots: 64, EarlyHints: true,
		},
		Routes: []Route{
			{Pattern: "GET /{$}", Page: "home", Cache: CachePolicy{Query: []string{"page"}}},
			{Pattern: "GET /products/{id}", Page: "product"},
			{Pattern: "GET /products/{id}/reviews", Page: "product-reviews", Stream: true},
		},
		MaxPageBytes: 16 << 20, CacheMaxBytes: 256 << 20, CacheMaxEntryBytes: 8 << 20,
	}
}

// newHandler mounts every route of site on one ServeMux, as the edge binary does through
// the public package.
func newHandler(site testSite) (http.Handler, error) {
	s, err := NewSite(site.Options)
	if err != nil {
		return nil, err
	}
	if site.Pages == nil { // no bundle to learn it from: the demo's, as its notFoundPage names it
		s.d.names.notFound = "not-found"
	}
	mux := http.NewServeMux()
	mux.Handle(assetsPattern, s.Assets())
	for _, r := range site.Routes {
		mux.Handle(r.Pattern, s.Page(r, PageOptions{}))
	}
	mux.Handle(notFoundRoute, s.NotFound())
	return s.Wrap(mux), nil
}

// fakeRenderer is a RenderService whose answer each test chooses.
type fakeRenderer struct {
	ssrv1.UnimplementedRenderServiceServer
	render func(context.Context, *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error)
	got    chan *ssrv1.RenderRequest
}

func (f *fakeRenderer) Render(ctx context.Context, req *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
	f.got <- req
	return f.render(ctx, req)
}

// failWith answers like the real renderer: a status plus its stable code in the trailer.
func failWith(code codes.Code, rendererCode, msg string) func(context.Context, *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
	return func(ctx context.Context, _ *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
		grpc.SetTrailer(ctx, metadata.Pairs(rendertest.ErrorTrailer, rendererCode))
		return nil, status.Error(code, msg)
	}
}

// renders answers like the real renderer: its time there in the trailer.
func renders(html string) func(context.Context, *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
	return func(ctx context.Context, req *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
		grpc.SetTrailer(ctx, metadata.Pairs(rendertest.RendererTimeTrailer, "3500"))
		return &ssrv1.RenderResponse{
			Page: req.Page, Status: 200, Html: []byte(html), Head: "<title>T</title>",
			PropsJson: []byte(`{"n":1}`), Timing: &ssrv1.Timing{QueueUs: 100, RenderUs: 3000, WorkerUs: 3100, WorkerId: 4},
		}, nil
	}
}

type stack struct {
	url      string
	renderer *fakeRenderer
	registry *prometheus.Registry
	clock    *fakeClock
	cache    *htmlcache.Cache
	handler  http.Handler
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// start runs the edge handler against a fake renderer on a temp unix socket, over real gRPC.
func start(t testing.TB, edit func(*testSite), options ...func(*Options)) *stack {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "r.sock")
	fake := &fakeRenderer{got: make(chan *ssrv1.RenderRequest, 100)}
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	ssrv1.RegisterRenderServiceServer(srv, rendertest.Server{RenderServiceServer: fake})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)

	e := defaultSite()
	e.AssetsDir = filepath.Join(dir, "client")
	os.MkdirAll(filepath.Join(e.AssetsDir, "assets", "sub"), 0o755)
	os.WriteFile(filepath.Join(e.AssetsDir, "assets", "client-1.js"), []byte("console.log(1)"), 0o644)
	os.WriteFile(filepath.Join(e.AssetsDir, "manifest.json"), []byte("secret"), 0o644)
	e.MaxPageBytes = 1 << 20
	// Caching is opt-in per test: these tests count render calls.
	for i := range e.Routes {
		e.Routes[i].Cache = CachePolicy{}
	}
	e.NotFoundTTL = 0
	e.TTLJitter = 0
	// Deadlines far beyond any fake render, so a slow CI runner never turns a
	// test's outcome into "timeout"; the tests of deadlines set their own.
	e.Timeouts.Render = 10 * time.Second
	e.Timeouts.Hard = 20 * time.Second
	if edit != nil {
		edit(&e)
	}
	client, err := renderclient.New("unix://"+sock, renderclient.Options{MaxPageBytes: e.MaxPageBytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	registry := prometheus.NewRegistry()
	metrics := NewMetrics(registry)
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	cache := htmlcache.New(htmlcache.Options{
		MaxBytes: e.CacheMaxBytes, MaxEntryBytes: e.CacheMaxEntryBytes,
		Now: clock.now, OnEvict: func(*htmlcache.Entry) { metrics.evictions.Inc() },
	})
	o := &e.Options
	o.Renderer, o.Manifest = client, &document.Manifest{BuildID: "b1", Scripts: []string{"/assets/client-1.js"}}
	o.Cache, o.Metrics, o.Log = cache, metrics, slog.New(slog.DiscardHandler)
	for _, option := range options {
		option(o)
	}
	h, err := newHandler(e)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &stack{url: ts.URL, renderer: fake, registry: registry, clock: clock, cache: cache, handler: h}
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func TestRenderedPages(t *testing.T) {
	s := start(t, nil)
	s.renderer.render = renders("<main>Product 7</main>")

	resp, body := get(t, s.url+"/products/7?utm=x")
	if resp.StatusCode != 200 || resp.Header.Get("X-SSR-Fallback") != "" {
		t.Fatalf("got %d fallback %q, want 200 and no fallback", resp.StatusCode, resp.Header.Get("X-SSR-Fallback"))
	}
	req := <-s.renderer.got
	if req.Page != "product" || req.Url != "/products/7?utm=x" || req.Params["id"] != "7" {
		t.Errorf("got request %v, want page product, the url and id=7", req)
	}
	for _, want := range []string{`<div id="root"><main>Product 7</main></div>`, "<title>T</title>", `"props":{"n":1}`, `"params":{"id":"7"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q", want)
		}
	}
	// The hop is the call as the edge saw it less the renderer's 3.5 ms: never negative.
	if got := resp.Header.Get("Server-Timing"); !regexp.MustCompile(`^cache;desc=miss, queue;dur=0\.10, load;dur=0\.00, render;dur=3\.00, worker;dur=3\.10;desc=4, renderer;dur=3\.50, hop;dur=\d+\.\d\d$`).MatchString(got) {
		t.Errorf("got Server-Timing %q", got)
	}
	if resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("got headers %v", resp.Header)
	}
}

func TestPageStatusAndHeaders(t *testing.T) {
	tests := []struct {
		name       string
		path       string
		resp       *ssrv1.RenderResponse
		wantStatus int
		wantHeader map[string]string
		wantPage   string
	}{
		{
			name: "page says 404", path: "/products/99999",
			resp:       &ssrv1.RenderResponse{Page: "not-found", Status: 404, Html: []byte("<p>gone</p>")},
			wantStatus: 404, wantPage: "not-found",
		},
		{
			name: "redirect", path: "/products/old",
			resp:       &ssrv1.RenderResponse{Status: 301, Headers: []*ssrv1.Header{{Name: "location", Value: "/products/1"}}},
			wantStatus: 301, wantHeader: map[string]string{"Location": "/products/1"},
		},
		{
			name: "page headers pass, edge-owned headers do not", path: "/",
			resp: &ssrv1.RenderResponse{Status: 200, Html: []byte("x"), Headers: []*ssrv1.Header{
				{Name: "vary", Value: "Accept-Language"}, {Name: "content-type", Value: "text/plain"}, {Name: "X-SSR-Fallback", Value: "lie"}}},
			wantStatus: 200, wantHeader: map[string]string{"Vary": "Accept-Language", "Content-Type": "text/html; charset=utf-8", "X-SSR-Fallback": ""},
		},
		{
			name: "unmatched path is a 404 of the not-found page", path: "/no/such/path",
			resp:       &ssrv1.RenderResponse{Page: "not-found", Status: 200, Html: []byte("nf")},
			wantStatus: 404, wantPage: "not-found",
		},
		{
			name: "impossible status falls back", path: "/",
			resp:       &ssrv1.RenderResponse{Status: 42},
			wantStatus: 200, wantHeader: map[string]string{"X-SSR-Fallback": ReasonInvalidReply},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, nil)
			s.renderer.render = func(context.Context, *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) { return tt.resp, nil }
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := client.Get(s.url + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("got status %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			for k, v := range tt.wantHeader {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("got %s %q, want %q", k, got, v)
				}
			}
			if tt.wantPage != "" && !strings.Contains(string(body), `"page":"`+tt.wantPage+`"`) {
				t.Errorf("hydration data does not name page %q:\n%s", tt.wantPage, body)
			}
		})
	}
}

func TestUnmatchedPathsShareOneRequest(t *testing.T) {
	s := start(t, nil)
	s.renderer.render = renders("nf")
	for _, path := range []string{"/a", "/b/c?d=e"} {
		get(t, s.url+path)
		req := <-s.renderer.got
		if req.Page != "not-found" || req.Url != "" || len(req.Params) != 0 {
			t.Errorf("%s: got request %v, want the not-found page with no url or params", path, req)
		}
	}
}

func TestFallbacks(t *testing.T) {
	// stuck never answers while the test runs, so a response proves the edge
	// stopped waiting at render_timeout; no wall-clock bound is needed.
	stuck := func(ctx context.Context, _ *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	huge := func(context.Context, *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
		return &ssrv1.RenderResponse{Status: 200, Html: make([]byte, 2<<20)}, nil
	}
	tests := []struct {
		name       string
		path       string
		render     func(context.Context, *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error)
		wantReason string
		wantStatus int
	}{
		{"page threw", "/", failWith(codes.Internal, "RENDER_ERR_PAGE_THREW", "boom"), ReasonRenderError, 200},
		{"queue full", "/", failWith(codes.ResourceExhausted, "RENDER_ERR_QUEUE_FULL", "queue full"), ReasonOverloaded, 200},
		{"page larger than max_page_mb", "/", huge, ReasonTooLarge, 200},
		// A page name the bundle lacks is a broken deploy, never a 200.
		{"unknown page", "/", failWith(codes.NotFound, "RENDER_ERR_PAGE_NOT_FOUND", "no page"), ReasonUnknownPage, 500},
		{"renderer draining", "/", failWith(codes.Unavailable, "RENDER_ERR_DRAINING", "draining"), ReasonUnavailable, 200},
		{"render deadline", "/", failWith(codes.DeadlineExceeded, "RENDER_ERR_DEADLINE", "too slow"), ReasonDeadline, 200},
		{"key quarantined by the renderer", "/", failWith(codes.FailedPrecondition, "RENDER_ERR_QUARANTINED", "killed 2 workers"), ReasonQuarantined, 200},
		{"page refused by the worker as too large", "/", failWith(codes.ResourceExhausted, "RENDER_ERR_PAGE_TOO_LARGE", "3 MB > 1 MB"), ReasonTooLarge, 200},
		// Another render killed the worker: never a 5xx, never the renderer's absence.
		{"worker lost to a render beside it", "/", failWith(codes.Aborted, "RENDER_ERR_WORKER_LOST", "worker terminated"), ReasonWorkerLost, 200},
		{"slower than render_timeout", "/", stuck, ReasonTimeout, 200},
		{"unmatched path keeps 404", "/nowhere", failWith(codes.Internal, "RENDER_ERR_PAGE_THREW", "boom"), ReasonRenderError, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, func(e *testSite) {
				if tt.wantReason == ReasonTimeout {
					e.Timeouts.Render = 100 * time.Millisecond
				}
			})
			s.renderer.render = tt.render
			resp, body := get(t, s.url+tt.path)
			assertFallback(t, resp, body, tt.wantStatus, tt.wantReason)
		})
	}
}

func TestWithdrawsRendersNobodyCanStore(t *testing.T) {
	s := start(t, func(e *testSite) { e.Timeouts.Render = 100 * time.Millisecond })
	withdrawn := make(chan struct{})
	s.renderer.render = func(ctx context.Context, _ *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
		<-ctx.Done() // the 20s hard timeout is far away: only a cancellation ends this
		close(withdrawn)
		return nil, ctx.Err()
	}
	resp, body := get(t, s.url+"/") // the home route is not cached in these tests
	assertFallback(t, resp, body, 200, ReasonTimeout)
	select {
	case <-withdrawn:
	case <-time.After(5 * time.Second):
		t.Fatal("the render went on after its request fell back, though nothing could store it")
	}
}

func TestRendererDown(t *testing.T) {
	dir := t.TempDir()
	e := defaultSite()
	e.AssetsDir = dir
	os.Mkdir(filepath.Join(dir, "assets"), 0o755)
	client, err := renderclient.New("unix://"+filepath.Join(dir, "nobody.sock"), renderclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	e.Renderer, e.Manifest = client, &document.Manifest{Scripts: []string{"/assets/c.js"}}
	e.Cache, e.Metrics, e.Log = htmlcache.New(htmlcache.Options{}), NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler)
	h, _ := newHandler(e)
	ts := httptest.NewServer(h)
	defer ts.Close()
	resp, body := get(t, ts.URL+"/")
	assertFallback(t, resp, body, 200, ReasonUnavailable)
}

func assertFallback(t *testing.T, resp *http.Response, body string, wantStatus int, wantReason string) {
	t.Helper()
	if resp.StatusCode != wantStatus {
		t.Errorf("got status %d, want %d", resp.StatusCode, wantStatus)
	}
	if got := resp.Header.Get("X-SSR-Fallback"); got != wantReason {
		t.Errorf("got X-SSR-Fallback %q, want %q", got, wantReason)
	}
	if got := resp.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("got Cache-Control %q, want no-store", got)
	}
	if !strings.Contains(body, `<div id="root"></div>`) || strings.Contains(body, `"props"`) {
		t.Errorf("want the client-side-render shell (empty root, no props), got:\n%s", body)
	}
}

func TestAssets(t *testing.T) {
	s := start(t, nil)
	tests := []struct {
		path       string
		wantStatus int
	}{
		{"/assets/client-1.js", 200},
		{"/assets/missing.js", 404},
		{"/assets/sub", 404},
		{"/assets/..%2fmanifest.json", 404},
		{"/assets/%2e%2e/manifest.json", 404},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, body := get(t, s.url+tt.path)
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("got %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if strings.Contains(body, "secret") {
				t.Errorf("served a file outside assets/")
			}
			if tt.wantStatus == 200 && resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
				t.Errorf("got Cache-Control %q", resp.Header.Get("Cache-Control"))
			}
		})
	}
}

func TestMetrics(t *testing.T) {
	s := start(t, nil)
	s.renderer.render = renders("ok")
	get(t, s.url+"/")
	get(t, s.url+"/products/1")
	get(t, s.url+"/assets/client-1.js")
	get(t, s.url+"/nowhere")
	s.renderer.render = failWith(codes.Internal, "RENDER_ERR_PAGE_THREW", "boom")
	get(t, s.url+"/")

	want := `
# HELP edge_requests_total HTTP requests by route pattern, status code and outcome (ssr, asset, a fallback reason, or client-closed).
# TYPE edge_requests_total counter
edge_requests_total{code="200",outcome="asset",route="GET /assets/"} 1
edge_requests_total{code="200",outcome="render-error",route="GET /{$}"} 1
edge_requests_total{code="200",outcome="ssr",route="GET /products/{id}"} 1
edge_requests_total{code="200",outcome="ssr",route="GET /{$}"} 1
edge_requests_total{code="404",outcome="ssr",route="GET /"} 1
`
	if err := testutil.GatherAndCompare(s.registry, strings.NewReader(want), "edge_requests_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(s.registry, "edge_render_duration_seconds"); n != 4 {
		t.Errorf("got %d render duration series, want 4 (three routes OK, one Internal)", n)
	}
	idle := "# HELP edge_renders_in_flight Render calls waiting for the renderer, a Go template's islands calls included, and those past their render timeout.\n" +
		"# TYPE edge_renders_in_flight gauge\nedge_renders_in_flight 0\n"
	if err := testutil.GatherAndCompare(s.registry, strings.NewReader(idle), "edge_renders_in_flight"); err != nil {
		t.Errorf("in-flight renders after every answer: %v", err)
	}
}

// TestEarlyHints: a request that waits for a render first gets a 103 naming the build's
// scripts to preload, then its page; with early_hints off, no 1xx at all.
func TestEarlyHints(t *testing.T) {
	for _, on := range []bool{true, false} {
		s := start(t, func(e *testSite) { e.EarlyHints = on })
		s.renderer.render = renders("<main>x</main>")
		var hints []textproto.MIMEHeader
		trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			if code == http.StatusEarlyHints {
				hints = append(hints, h)
			}
			return nil
		}}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", s.url+"/products/7", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("early_hints %v: got %d, want the page", on, resp.StatusCode)
		}
		switch {
		case on && (len(hints) != 1 || hints[0].Get("Link") != "</assets/client-1.js>; rel=modulepreload"):
			t.Errorf("early_hints on: got 103s %v, want one with Link: </assets/client-1.js>; rel=modulepreload", hints)
		case !on && len(hints) != 0:
			t.Errorf("early_hints off: got 103s %v, want none", hints)
		}
	}
}
