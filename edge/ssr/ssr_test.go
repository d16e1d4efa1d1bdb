package ssr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/logtest"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/renderclient/rendertest"
)

// fakeRenderer renders "<page>: <props>" and returns the props it was given, as the real
// renderer does for a page without load().
type fakeRenderer struct {
	ssrv1.UnimplementedRenderServiceServer
	calls atomic.Int64
	delay time.Duration
	down  atomic.Bool
	// pages are the bundle's page names; nil: ListPages is unimplemented.
	pages []string
	// bundle is the bundle's id ListPages and each render answer.
	bundle atomic.Pointer[string]
	// unknown: every page is unknown (NOT_FOUND), as for a bundle without it.
	unknown bool
	// cannotStream: the bundle does not export renderToPipeableStream; cannotPrerender,
	// prerenderToNodeStream and resumeToPipeableStream.
	cannotStream, cannotPrerender bool
	// maxRequest is the largest request ListPages says the renderer accepts.
	maxRequest int
	// notFoundPage is the page ListPages says the bundle's notFoundPage export names; lang
	// and documentHead what it says of every document.
	notFoundPage, lang, documentHead string
}

func (f *fakeRenderer) ListPages(context.Context, *ssrv1.ListPagesRequest) (*ssrv1.ListPagesResponse, error) {
	if f.pages == nil {
		return f.UnimplementedRenderServiceServer.ListPages(nil, nil)
	}
	resp := &ssrv1.ListPagesResponse{Pages: f.pages, CanStream: !f.cannotStream, CanPrerender: !f.cannotPrerender, MaxRequestBytes: uint64(f.maxRequest),
		NotFoundPage: f.notFoundPage, Lang: f.lang, DocumentHead: f.documentHead}
	if b := f.bundle.Load(); b != nil {
		resp.BundleId = *b
	}
	return resp, nil
}

func (f *fakeRenderer) Render(ctx context.Context, req *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
	f.calls.Add(1)
	if f.down.Load() {
		return nil, errors.New("renderer trouble")
	}
	if f.unknown {
		return nil, status.Error(codes.NotFound, "no page "+req.Page)
	}
	time.Sleep(f.delay)
	props := req.PropsJson
	if len(props) == 0 {
		props = []byte("{}")
	}
	resp := &ssrv1.RenderResponse{Page: req.Page, Status: 200, Html: []byte(req.Page + ": " + string(props)), PropsJson: props}
	if b := f.bundle.Load(); b != nil {
		resp.BundleId = *b
	}
	return resp, nil
}

type fixture struct {
	srv      *Server
	renderer *fakeRenderer
	logs     *logtest.Buffer
}

// newFixture starts a fake renderer on a temp unix socket and a Server in front of it.
func newFixture(t *testing.T, o Options) *fixture {
	t.Helper()
	return newFixtureOn(t, o, &fakeRenderer{})
}

// newFixtureOn is newFixture with a fake renderer set up by the test.
func newFixtureOn(t *testing.T, o Options, fake *fakeRenderer) *fixture {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "r.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	ssrv1.RegisterRenderServiceServer(g, rendertest.Server{RenderServiceServer: fake})
	go g.Serve(lis)
	t.Cleanup(g.Stop)

	assets := filepath.Join(dir, "client")
	os.MkdirAll(filepath.Join(assets, "assets"), 0o755)
	os.WriteFile(filepath.Join(assets, "manifest.json"), []byte(`{"buildId":"b1","scripts":["/assets/c.js"]}`), 0o644)
	os.WriteFile(filepath.Join(assets, "assets", "c.js"), []byte("1"), 0o644)
	logs := &logtest.Buffer{}
	o.RendererAddress, o.AssetsDir = "unix://"+sock, assets
	if o.Timeouts.Render == 0 {
		o.Timeouts.Render, o.Timeouts.Hard = 10*time.Second, 20*time.Second // no slow runner turns a test into a timeout
	}
	o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if fake.pages != nil {
		// What the bundle names (its not-found page) is learned before the first request.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Check(ctx)
	}
	return &fixture{srv: srv, renderer: fake, logs: logs}
}

// productBundle is a fake renderer whose bundle has the pages product and not-found, its
// notFoundPage.
func productBundle() *fakeRenderer {
	return &fakeRenderer{pages: []string{"product", "not-found"}, notFoundPage: "not-found"}
}

func serve(h http.Handler, target string, header ...string) *httptest.ResponseRecorder {
	mux := http.NewServeMux()
	mux.Handle("GET /products/{id}", h)
	mux.Handle("GET /{$}", h)
	r := httptest.NewRequest("GET", target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, r)
	return rec
}

type product struct {
	ID    int    `json:"id"`
	Name  string `json:"name"`
	Price int    `json:"priceCents"`
}

func TestLoaderPropsReachThePageAndTheBrowser(t *testing.T) {
	f := newFixture(t, Options{})
	h := f.srv.Page("product", PageOptions{Load: func(r *http.Request) (Result, error) {
		return Result{Props: product{ID: 7, Name: "Teapot </script>", Price: 1999}}, nil
	}})
	rec := serve(h, "/products/7")
	want := `{"id":7,"name":"Teapot \u003c/script\u003e","priceCents":1999}`
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "product: "+want) {
		t.Fatalf("got %d %q, want the page rendered with the loader's props", rec.Code, rec.Body.String())
	}
	// The hydration data carries the props the page rendered with, escaped for a script.
	if !strings.Contains(rec.Body.String(), `"props":{"id":7,"name":"Teapot \u003c/script\u003e"`) {
		t.Errorf("the document's hydration data does not carry the props:\n%s", rec.Body.String())
	}
}

func TestLoaderRunsOnlyWhenARenderIsNeeded(t *testing.T) {
	f := newFixture(t, Options{})
	f.renderer.delay = 100 * time.Millisecond
	var loads atomic.Int64
	h := f.srv.Page("product", PageOptions{
		Cache: CachePolicy{TTL: time.Minute, Query: []string{}},
		Load: func(r *http.Request) (Result, error) {
			loads.Add(1)
			return Result{Props: map[string]string{"id": r.PathValue("id")}}, nil
		},
	})
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() { defer wg.Done(); serve(h, "/products/3") }()
	}
	wg.Wait()
	if rec := serve(h, "/products/3"); !strings.HasPrefix(rec.Header().Get("Cache-Status"), "sidecar-ssr; hit") {
		t.Errorf("got Cache-Status %q, want a hit", rec.Header().Get("Cache-Status"))
	}
	if n := loads.Load(); n != 1 {
		t.Errorf("the loader ran %d times for 21 requests on one key, want once", n)
	}
}

// TestLoaderSeesWhatTheKeyHolds: a shared, stored render must not depend on what its key
// leaves out, so the loader sees the path values, the kept query and the variants only.
func TestLoaderSeesWhatTheKeyHolds(t *testing.T) {
	f := newFixture(t, Options{})
	seen := make(chan *http.Request, 2)
	var withDeadline atomic.Bool
	h := f.srv.Page("product", PageOptions{
		Cache:    CachePolicy{TTL: time.Minute, Query: []string{"color"}, PersonalizeCookies: []string{"session"}},
		Variants: []string{"cookie:currency", "header:Accept-Language"},
		Load: func(r *http.Request) (Result, error) {
			_, ok := r.Context().Deadline()
			withDeadline.Store(ok && r.Context().Err() == nil)
			seen <- r
			return Result{}, nil
		},
	})
	serve(h, "/products/9?color=red&sort=asc", "Cookie", "currency=EUR; tracking=abc", "Accept-Language", "de", "X-Secret", "1")
	r := <-seen
	if got := r.PathValue("id"); got != "9" {
		t.Errorf("path value id = %q, want 9", got)
	}
	if got := r.URL.RawQuery; got != "color=red" {
		t.Errorf("query %q, want only the kept color=red", got)
	}
	if c, err := r.Cookie("currency"); err != nil || c.Value != "EUR" {
		t.Errorf("the currency variant cookie is missing: %v", err)
	}
	if _, err := r.Cookie("tracking"); err == nil || r.Header.Get("X-Secret") != "" || r.Header.Get("Accept-Language") != "de" {
		t.Errorf("the loader saw %v: want the variants and nothing else", r.Header)
	}
	if !withDeadline.Load() {
		t.Errorf("the loader's context has no deadline (HardTimeout), or had already ended")
	}

	// A personal request bypasses the cache and gets the whole request.
	serve(h, "/products/9?sort=asc", "Cookie", "session=s1; tracking=abc")
	if r := <-seen; r.URL.Query().Get("sort") != "asc" || r.Header.Get("Cookie") != "session=s1; tracking=abc" {
		t.Errorf("a bypassing request's loader saw %s %v, want all of it", r.URL, r.Header)
	}
}

func TestLoaderFailures(t *testing.T) {
	tests := []struct {
		name    string
		load    Loader
		wantLog string
	}{
		{"error", func(*http.Request) (Result, error) { return Result{}, errors.New("database is down") }, "database is down"},
		{"panic", func(*http.Request) (Result, error) { panic("nil map") }, "panic: nil map"},
		{"props not JSON", func(*http.Request) (Result, error) { return Result{Props: map[string]any{"c": make(chan int)}}, nil }, "props are not JSON"},
		{"props not an object", func(*http.Request) (Result, error) { return Result{Props: []int{1, 2}}, nil }, "props must be a JSON object"},
		{"props a nil pointer", func(*http.Request) (Result, error) { return Result{Props: (*struct{})(nil)}, nil }, "props must be a JSON object"},
		{"raw props not JSON", func(*http.Request) (Result, error) { return Result{Props: json.RawMessage(`{"a":`)}, nil }, "props must be a JSON object"},
		{"raw props not an object", func(*http.Request) (Result, error) { return Result{Props: json.RawMessage(` [1]`)}, nil }, "props must be a JSON object"},
		{"props too large for the renderer's requests", func(*http.Request) (Result, error) {
			return Result{Props: map[string]string{"blob": strings.Repeat("x", 3<<20)}}, nil // over its 4 MiB, less a quarter
		}, "over the limit of 3145728 bytes (three quarters of the renderer's max_request_mb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixtureOn(t, Options{}, &fakeRenderer{pages: []string{"product"}, maxRequest: 4 << 20})
			if err := f.srv.Check(context.Background()); err != nil {
				t.Fatal(err)
			}
			rec := serve(f.srv.Page("product", PageOptions{Load: tt.load}), "/products/1")
			if rec.Code != 503 || rec.Header().Get("X-SSR-Fallback") != "load-error" || rec.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("got %d X-SSR-Fallback %q, want 503 load-error no-store", rec.Code, rec.Header().Get("X-SSR-Fallback"))
			}
			if !strings.Contains(rec.Body.String(), `<div id="root"></div>`) {
				t.Errorf("want the document without server markup, got %q", rec.Body.String())
			}
			if !strings.Contains(f.logs.String(), tt.wantLog) {
				t.Errorf("the log does not say %q:\n%s", tt.wantLog, f.logs.String())
			}
			if n := f.renderer.calls.Load(); n != 0 {
				t.Errorf("the page was rendered %d times after its loader failed", n)
			}
		})
	}
}

// TestLoaderErrorServesTheStaleCopy: inside stale-if-error a failing loader is covered like
// a failing render.
func TestLoaderErrorServesTheStaleCopy(t *testing.T) {
	f := newFixture(t, Options{})
	var failing atomic.Bool
	h := f.srv.Page("home", PageOptions{
		Cache: CachePolicy{TTL: time.Millisecond, StaleIfError: time.Hour, Query: []string{}},
		Load: func(*http.Request) (Result, error) {
			if failing.Load() {
				return Result{}, errors.New("database is down")
			}
			return Result{Props: map[string]int{"n": 1}}, nil
		},
	})
	first := serve(h, "/")
	failing.Store(true)
	// Hits until the 1 ms TTL has passed (polled: no sleep guesses when), then the stale copy.
	var rec *httptest.ResponseRecorder
	poll.Until(t, "the 1 ms TTL to pass (a response that is not a fresh hit)", func() bool {
		rec = serve(h, "/")
		return !strings.Contains(rec.Header().Get("Cache-Status"), "; hit")
	})
	if rec.Code != 200 || rec.Body.String() != first.Body.String() || !strings.HasSuffix(rec.Header().Get("Cache-Status"), "detail=load-error") {
		t.Errorf("got %d Cache-Status %q, want the stale copy", rec.Code, rec.Header().Get("Cache-Status"))
	}
}

// TestSlowLoaderCountsAgainstRenderTimeout: the render timeout covers the loader and the
// render; the late result still fills the cache.
func TestSlowLoaderCountsAgainstRenderTimeout(t *testing.T) {
	f := newFixture(t, Options{Timeouts: Timeouts{Render: 50 * time.Millisecond, Hard: 10 * time.Second}})
	release := make(chan struct{})
	h := f.srv.Page("home", PageOptions{
		Cache: CachePolicy{TTL: time.Minute, Query: []string{}},
		Load: func(*http.Request) (Result, error) {
			<-release
			return Result{Props: map[string]int{"n": 1}}, nil
		},
	})
	if rec := serve(h, "/"); rec.Header().Get("X-SSR-Fallback") != "timeout" || rec.Code != 200 {
		t.Fatalf("got %d X-SSR-Fallback %q, want the timeout fallback", rec.Code, rec.Header().Get("X-SSR-Fallback"))
	}
	close(release)
	poll.Until(t, "the late load and render stored", func() bool {
		return strings.HasPrefix(serve(h, "/").Header().Get("Cache-Status"), "sidecar-ssr; hit")
	})
}

func TestResultShapesTheResponse(t *testing.T) {
	tests := []struct {
		name       string
		result     Result
		wantCode   int
		wantHeader [2]string
		wantBody   string
		stored     bool
	}{
		{"status", Result{Status: 410, Props: map[string]int{}}, 410, [2]string{}, "product: {}", false},
		{"header", Result{Header: http.Header{"X-Shop": {"yes"}}}, 200, [2]string{"X-Shop", "yes"}, "product: {}", true},
		{"private cookie", Result{Header: http.Header{"Set-Cookie": {"sid=1"}}}, 200, [2]string{"Set-Cookie", "sid=1"}, "", false},
		{"redirect", Result{Redirect: "/products/8"}, 302, [2]string{"Location", "/products/8"}, "", false},
		{"permanent redirect", Result{Redirect: "/products/8", Status: 301}, 301, [2]string{"Location", "/products/8"}, "", true},
		{"not found", Result{NotFound: true}, 404, [2]string{}, "not-found: {}", true},
		{"no store", Result{Header: http.Header{"Cache-Control": {"no-store"}}}, 200, [2]string{}, "product: {}", false},
		{"raw JSON props", Result{Props: json.RawMessage(`{"raw":true}`)}, 200, [2]string{}, `product: {"raw":true}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixtureOn(t, Options{}, productBundle())
			h := f.srv.Page("product", PageOptions{Cache: CachePolicy{TTL: time.Minute, Query: []string{}}, Load: func(*http.Request) (Result, error) { return tt.result, nil }})
			rec := serve(h, "/products/1")
			if rec.Code != tt.wantCode || (tt.wantHeader[0] != "" && rec.Header().Get(tt.wantHeader[0]) != tt.wantHeader[1]) || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("got %d %v %q", rec.Code, rec.Header(), rec.Body.String())
			}
			again := serve(h, "/products/1")
			if hit := strings.HasPrefix(again.Header().Get("Cache-Status"), "sidecar-ssr; hit"); hit != tt.stored {
				t.Errorf("second request: Cache-Status %q, want stored %v", again.Header().Get("Cache-Status"), tt.stored)
			}
		})
	}
}

func TestMaxAgeShortensTheTTL(t *testing.T) {
	f := newFixture(t, Options{})
	h := f.srv.Page("home", PageOptions{Cache: CachePolicy{TTL: time.Hour, Query: []string{}}, Load: func(*http.Request) (Result, error) {
		return Result{MaxAge: 30 * time.Second}, nil
	}})
	serve(h, "/")
	got := serve(h, "/").Header().Get("Cache-Status")
	var ttl int
	if _, err := fmt.Sscanf(got, "sidecar-ssr; hit; ttl=%d", &ttl); err != nil || ttl < 26 || ttl > 30 {
		t.Errorf("got Cache-Status %q, want a hit with ttl 30, less the jitter (a tenth at most) and a second begun", got)
	}
}

func TestRenderInsideAHandler(t *testing.T) {
	f := newFixture(t, Options{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := f.srv.Render(w, r, "product", Result{Props: product{ID: 1, Name: "Mug"}}); err != nil {
			t.Errorf("a rendered page: got %v, want no error", err)
		}
	})
	for range 2 {
		rec := serve(h, "/products/1")
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `product: {"id":1,"name":"Mug","priceCents":0}`) {
			t.Fatalf("got %d %q", rec.Code, rec.Body.String())
		}
	}
	if n := f.renderer.calls.Load(); n != 2 {
		t.Errorf("got %d renders for two direct renders, want 2 (uncached)", n)
	}
	var err error
	rec := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err = f.srv.Render(w, r, "product", Result{Props: func() {}})
	}), "/products/1")
	if rec.Code != 503 || rec.Header().Get("X-SSR-Fallback") != "load-error" {
		t.Errorf("props that are not JSON: got %d %q", rec.Code, rec.Header().Get("X-SSR-Fallback"))
	}
	if !errors.Is(err, ErrFallback) || !strings.Contains(err.Error(), "load-error") {
		t.Errorf("props that are not JSON: got error %v, want ErrFallback naming load-error", err)
	}
}

func TestRendererDownKeepsThePageAnswering(t *testing.T) {
	f := newFixture(t, Options{})
	f.renderer.down.Store(true)
	rec := serve(f.srv.Page("home", PageOptions{Load: func(*http.Request) (Result, error) {
		return Result{Props: map[string]int{"n": 1}}, nil
	}}), "/")
	if rec.Code != 200 || rec.Header().Get("X-SSR-Fallback") != "render-error" {
		t.Errorf("got %d %q, want the client-side-render document", rec.Code, rec.Header().Get("X-SSR-Fallback"))
	}
	// The loader ran: the browser renders the page from its props.
	if body := rec.Body.String(); !strings.Contains(body, `<div id="root"></div>`) || !strings.Contains(body, `"props":{"n":1}`) {
		t.Errorf("want an empty root and the loader's props in the document, got %q", body)
	}
}

// TestResultHeadInEveryDocument: the head a loader gives is in the rendered page's document,
// after the bundle's documentHead and before the page's own head, and in the fallback's,
// where the page's head() did not run.
func TestResultHeadInEveryDocument(t *testing.T) {
	fake := productBundle()
	fake.documentHead = `<link rel="icon" href="/favicon.ico">`
	f := newFixtureOn(t, Options{}, fake)
	page := f.srv.Page("product", PageOptions{Load: func(*http.Request) (Result, error) {
		return Result{Props: map[string]int{"n": 1}, Head: `<title>Books &amp; more</title>`}, nil
	}})
	want := `<link rel="icon" href="/favicon.ico">` + "\n" + `<title>Books &amp; more</title>` + "\n"
	for _, down := range []bool{false, true} {
		f.renderer.down.Store(down)
		rec := serve(page, "/")
		if fallback := rec.Header().Get("X-SSR-Fallback") != ""; fallback != down {
			t.Fatalf("renderer down %v: X-SSR-Fallback %q", down, rec.Header().Get("X-SSR-Fallback"))
		}
		if body := rec.Body.String(); !strings.Contains(body, want) {
			t.Errorf("renderer down %v: the head lacks\n%s\nin\n%s", down, want, body)
		}
	}
}

func TestPurge(t *testing.T) {
	f := newFixture(t, Options{})
	h := f.srv.Page("product", PageOptions{Cache: CachePolicy{TTL: time.Minute, Query: []string{}}})
	serve(h, "/products/1")
	serve(h, "/products/2")
	if n, err := f.srv.Purge(context.Background(), ByPath("/products/1")); n != 1 || err != nil {
		t.Errorf("Purge(ByPath) removed %d (%v), want 1", n, err)
	}
	if n, err := f.srv.Purge(context.Background(), ByPrefix("/products/")); n != 1 || err != nil {
		t.Errorf("Purge(ByPrefix) removed %d (%v), want 1", n, err)
	}
	if n, err := f.srv.Purge(context.Background(), ByPrefix("")); n != 0 || err != nil {
		t.Errorf("an empty prefix purged %d (%v)", n, err)
	}
}

func TestInvalidOptions(t *testing.T) {
	if _, err := New(Options{Timeouts: Timeouts{Render: 3 * time.Second, Hard: time.Second}}); err == nil || !strings.Contains(err.Error(), "ssr: Options.Timeouts.Render 3s is above Options.Timeouts.Hard 1s") {
		t.Errorf("soft above hard: got %v", err)
	}
	if _, err := New(Options{AssetsDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "manifest") {
		t.Errorf("no client build: got %v", err)
	}
	f := newFixture(t, Options{})
	f.srv.Page("home", PageOptions{Variants: []string{"query:x"}})
	f.srv.Island("Cart", -time.Second)
	f.srv.Island("no spaces", 0)
	code, body := readyz(f)
	for _, want := range []string{"PageOptions.Variants[0]", `Island "Cart": ttl must not be negative`, `"no spaces": a name is`} {
		if code != http.StatusServiceUnavailable || !strings.Contains(body, want) {
			t.Errorf("/readyz: got %d %q, want 503 saying %s", code, body, want)
		}
	}
}

// TestPerRequestNeedsACachedPage: a partially prerendered page's options are checked where
// they are given: its shell must be cached, and each value well named and given.
func TestPerRequestNeedsACachedPage(t *testing.T) {
	value := func(*http.Request) (any, error) { return nil, nil }
	cached := CachePolicy{TTL: time.Minute, Query: []string{}}
	for _, tt := range []struct {
		name string
		page PageOptions
		want string
	}{
		{"uncached", PageOptions{PerRequest: map[string]RequestValue{"cart": value}}, "PageOptions.PerRequest needs a cached page"},
		{"a bad name", PageOptions{Cache: cached, PerRequest: map[string]RequestValue{"a cart": value}}, `PageOptions.PerRequest["a cart"]`},
		{"no function", PageOptions{Cache: cached, PerRequest: map[string]RequestValue{"cart": nil}}, `PageOptions.PerRequest["cart"] has no function`},
		{"valid", PageOptions{Cache: cached, PerRequest: map[string]RequestValue{"cart": value}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.page.Validate(Options{})
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// TestShedBeforeTheLoader: past RenderSlots a request falls back at once, and its
// Loader (the shop's database work) never runs for a render it would not get.
func TestShedBeforeTheLoader(t *testing.T) {
	f := newFixture(t, Options{RenderSlots: 1})
	entered, release := make(chan struct{}), make(chan struct{})
	var loads atomic.Int64
	h := f.srv.Page("product", PageOptions{Load: func(r *http.Request) (Result, error) {
		if loads.Add(1) == 1 {
			close(entered)
			<-release
		}
		return Result{Props: map[string]string{"id": r.PathValue("id")}}, nil
	}})
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- serve(h, "/products/1") }()
	<-entered // the one render slot is held by that request's loader
	shed := serve(h, "/products/2")
	if shed.Header().Get("X-SSR-Fallback") != "overloaded" {
		t.Errorf("second request: X-SSR-Fallback %q, want overloaded", shed.Header().Get("X-SSR-Fallback"))
	}
	if n := loads.Load(); n != 1 {
		t.Errorf("the loader ran %d times, want once: a shed request must not load", n)
	}
	close(release)
	if first := <-done; first.Code != 200 || first.Header().Get("X-SSR-Fallback") != "" {
		t.Errorf("first request: %d, fallback %q", first.Code, first.Header().Get("X-SSR-Fallback"))
	}
}

// TestAdminMetrics: /metrics serves the Server's own metrics without wiring: the private
// registry, or Options.Registerer when it can be gathered; with one that cannot, none.
func TestAdminMetrics(t *testing.T) {
	own := prometheus.NewRegistry()
	for _, tt := range []struct {
		name       string
		registerer prometheus.Registerer
		code       int
		want       []string
		notWant    string
	}{
		{"nothing wired", nil, 200, []string{"edge_cache_bytes", "go_goroutines", "process_cpu_seconds_total"}, ""},
		{"a registry as Options.Registerer", own, 200, []string{"edge_cache_bytes"}, "go_goroutines"},
		{"a Registerer that cannot be gathered", prometheus.WrapRegistererWith(prometheus.Labels{"shop": "x"}, prometheus.NewRegistry()), 404, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixtureOn(t, Options{Registerer: tt.registerer}, &fakeRenderer{pages: []string{"product"}})
			f.srv.Page("product", PageOptions{})
			rec := httptest.NewRecorder()
			f.srv.Admin().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			body := rec.Body.String()
			if rec.Code != tt.code {
				t.Errorf("/metrics: got %d, want %d", rec.Code, tt.code)
			}
			for _, name := range tt.want {
				if !strings.Contains(body, name) {
					t.Errorf("/metrics: no %s", name)
				}
			}
			if tt.notWant != "" && strings.Contains(body, tt.notWant) {
				t.Errorf("/metrics: serves %s", tt.notWant)
			}
		})
	}
}

// TestAdmin: the package's admin handler is the edge binary's: liveness, readiness that
// follows draining and the bundle's page names, metrics, and purges only for the token's
// bearers.
func TestAdmin(t *testing.T) {
	f := newFixtureOn(t, Options{AdminToken: "t0ken"}, &fakeRenderer{pages: []string{"product", "not-found"}, notFoundPage: "not-found"})
	f.srv.Page("product", PageOptions{})
	f.srv.NotFound()
	admin := f.srv.Admin()
	do := func(method, target string) int {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(method, target, nil)
		r.RemoteAddr = "203.0.113.9:1234" // not loopback
		admin.ServeHTTP(rec, r)
		return rec.Code
	}
	if got := do("GET", "/healthz"); got != 200 {
		t.Errorf("/healthz: got %d", got)
	}
	if got := do("GET", "/readyz"); got != 200 {
		t.Errorf("/readyz: got %d, want 200", got)
	}
	f.srv.Page("prodcut", PageOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f.srv.Check(ctx)
	if got := do("GET", "/readyz"); got != 503 {
		t.Errorf("/readyz with a page the bundle lacks: got %d, want 503", got)
	}
	if got := do("POST", "/cache/purge?path=/"); got != 403 {
		t.Errorf("a purge without the token: got %d, want 403", got)
	}
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/cache/purge?path=/", nil)
	r.Header.Set("Authorization", "Bearer t0ken")
	admin.ServeHTTP(rec, r)
	if rec.Code != 200 {
		t.Errorf("a purge with Options.AdminToken: got %d %s, want 200", rec.Code, rec.Body)
	}
}

// TestDrain: once Drain is called, readiness is false for good.
func TestDrain(t *testing.T) {
	f := newFixtureOn(t, Options{}, &fakeRenderer{pages: []string{"product", "not-found"}, notFoundPage: "not-found"})
	f.srv.Page("product", PageOptions{})
	admin := f.srv.Admin()
	ready := func() int {
		rec := httptest.NewRecorder()
		admin.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code
	}
	if got := ready(); got != 200 {
		t.Fatalf("/readyz before Drain: got %d, want 200", got)
	}
	f.srv.Drain()
	if got := ready(); got != 503 {
		t.Errorf("/readyz after Drain: got %d, want 503", got)
	}
}
