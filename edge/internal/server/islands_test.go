package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/renderclient"
)

// rendererMaxIslands is the most islands the renderer takes in one call
// (renderer/src/serve/islands.js, MAX_ISLANDS); past it, it refuses the call as invalid.
const rendererMaxIslands = 256

// islandRenderer renders each island as <b>NAME PROPS</b>, fails those named "Throws", and
// records its calls; down fails every call, and so does one of more islands than the
// renderer takes, as the renderer refuses it.
type islandRenderer struct {
	mu    sync.Mutex
	calls [][]string // the island names of each call
	down  bool
	// during, if set, is called with each call's context
	during func(ctx context.Context)
}

func (*islandRenderer) Render(context.Context, *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
	return nil, errors.New("pages are not rendered here")
}

func (f *islandRenderer) RenderIslands(ctx context.Context, req *ssrv1.RenderIslandsRequest) (*ssrv1.RenderIslandsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.during != nil {
		f.during(ctx)
	}
	var names []string
	resp := &ssrv1.RenderIslandsResponse{}
	for _, i := range req.GetIslands() {
		names = append(names, i.GetName())
		if i.GetName() == "Throws" {
			resp.Islands = append(resp.Islands, &ssrv1.IslandResult{Outcome: &ssrv1.IslandResult_Error{Error: &ssrv1.IslandError{
				Code: ssrv1.RenderErr_RENDER_ERR_PAGE_THREW, Message: "boom"}}})
			continue
		}
		resp.Islands = append(resp.Islands, &ssrv1.IslandResult{Outcome: &ssrv1.IslandResult_Rendered{Rendered: &ssrv1.RenderResponse{
			Html: []byte("<b>" + i.GetName() + " " + string(i.GetPropsJson()) + "</b>"), Status: 200, BundleId: "bundle-1"}}})
	}
	f.calls = append(f.calls, names)
	if f.down {
		return nil, &renderclient.Error{Status: status.New(codes.Unavailable, "down")}
	}
	if len(names) > rendererMaxIslands {
		return nil, &renderclient.Error{Status: status.New(codes.InvalidArgument, "RenderIslands: more than 256 islands")}
	}
	return resp, nil
}

func (f *islandRenderer) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// islandSite serves /order behind Wrap, a Go template with islands Featured (declared,
// cached), Cart (undeclared: uncached) and Throws, under a CSP nonce: the
// shop's handler executes it into a buffer, then writes its own status, 202, and the page.
func islandSite(t *testing.T, r Renderer, opts ...func(*Options)) (*Site, *Metrics, string) {
	t.Helper()
	e := defaultSite().Options
	e.AssetsDir = t.TempDir()
	if err := os.Mkdir(filepath.Join(e.AssetsDir, "assets"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.Renderer = r
	e.Manifest = &document.Manifest{BuildID: "b1", Scripts: []string{"/assets/client-1.js"}, Styles: []string{"/assets/client-1.css"}}
	e.Cache = htmlcache.New(htmlcache.Options{MaxBytes: 1 << 20, MaxEntryBytes: 1 << 20})
	e.Metrics, e.Log = NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler)
	e.Nonce = func(*http.Request) string { return "n0nce" }
	e.Timeouts.Render = 10 * time.Second
	for _, o := range opts {
		o(&e)
	}
	site, err := NewSite(e)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(site.Close)
	site.Island("Featured", time.Hour)
	page := template.Must(template.New("order").Funcs(template.FuncMap{"island": IslandMarker}).Parse(
		`<!doctype html><html><head><title>Order {{.ID}}</title></head><body><h1>Order {{.ID}}</h1>` +
			`{{ island "Featured" .Featured }}<p>{{.Note}}</p>{{ island "Cart" .Cart }}{{ island "Throws" nil }}</body></html>`))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /order", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Shop", "mine")
		data := map[string]any{
			"ID": 7, "Note": "</script><!--", "Featured": map[string]any{"ids": []int{1, 2}},
			"Cart": map[string]any{"user": r.URL.Query().Get("user") + "</script>\u2028"},
		}
		var b bytes.Buffer
		if err := page.Execute(&b, data); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		b.WriteTo(w)
	})
	ts := httptest.NewServer(site.Wrap(mux))
	t.Cleanup(ts.Close)
	return site, e.Metrics, ts.URL + "/order"
}

// TestIslandsRenderedInOneCall: behind Wrap, a Go template's islands are rendered in one
// call, each in its root with its props escaped after it; the page keeps the handler's
// status, its headers and its own head, and the client build is linked before the first
// island under the response's nonce; an island that fails is left to the browser alone,
// counted with its reason.
func TestIslandsRenderedInOneCall(t *testing.T) {
	r := &islandRenderer{}
	_, metrics, url := islandSite(t, r)
	resp, doc := get(t, url+"?user=ann")
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("X-Shop") != "mine" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("status %d, X-Shop %q, Content-Type %q: want the handler's 202 and header, HTML",
			resp.StatusCode, resp.Header.Get("X-Shop"), resp.Header.Get("Content-Type"))
	}
	if len(r.calls) != 1 || strings.Join(r.calls[0], ",") != "Featured,Cart,Throws" {
		t.Fatalf("calls %v: want one with the three islands in order", r.calls)
	}
	for _, want := range []string{
		`<head><title>Order 7</title></head><body><h1>Order 7</h1>` +
			`<link rel="stylesheet" href="/assets/client-1.css">` + "\n" +
			`<script nonce="n0nce" type="module" src="/assets/client-1.js"></script>` + "\n" +
			`<div data-ssr-island="Featured"><b>Featured {"ids":[1,2]}</b></div><script type="application/json" data-ssr-island-props>{"ids":[1,2]}</script>`,
		`<p>&lt;/script&gt;&lt;!--</p>`,
		`<div data-ssr-island="Cart"><b>Cart {"user":"ann\u003c/script\u003e\u2028"}</b></div><script type="application/json" data-ssr-island-props>{"user":"ann\u003c/script\u003e\u2028"}</script>`,
		`<div data-ssr-island="Throws"></div><script type="application/json" data-ssr-island-props>{}</script></body></html>`,
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("the page lacks\n%s\nin\n%s", want, doc)
		}
	}
	if strings.Contains(doc, "ssr-island:") || strings.Count(doc, "client-1.js") != 1 {
		t.Errorf("a marker is left in the page, or the client build not linked once:\n%s", doc)
	}
	for _, c := range []struct{ island, outcome string }{{"Featured", "rendered"}, {"Cart", "rendered"}, {"Throws", ReasonRenderError}} {
		if got := testutil.ToFloat64(metrics.islands.WithLabelValues(c.island, c.outcome)); got != 1 {
			t.Errorf("edge_islands_total{island=%s,outcome=%s} = %v, want 1", c.island, c.outcome, got)
		}
	}
}

// TestIslandsCachedByProps: a declared island with a TTL is rendered once per props and code,
// then served from the cache with no call for it. An undeclared island renders every time.
func TestIslandsCachedByProps(t *testing.T) {
	r := &islandRenderer{}
	_, metrics, url := islandSite(t, r)
	get(t, url+"?user=ann")
	get(t, url+"?user=bob")
	if got := strings.Join(r.calls[1], ","); got != "Cart,Throws" {
		t.Errorf("second page's call: %s, want Featured from the cache", got)
	}
	if got := testutil.ToFloat64(metrics.islands.WithLabelValues("Featured", "hit")); got != 1 {
		t.Errorf("Featured hits: %v, want 1", got)
	}
}

// TestIslandsWithoutARenderer: a renderer that is down leaves every island to the browser,
// props in place, and the page is still the shop's, with its status.
func TestIslandsWithoutARenderer(t *testing.T) {
	r := &islandRenderer{down: true}
	_, metrics, url := islandSite(t, r)
	resp, doc := get(t, url)
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("status %d, want 202", resp.StatusCode)
	}
	for _, name := range []string{"Featured", "Cart", "Throws"} {
		if !strings.Contains(doc, `<div data-ssr-island="`+name+`"></div><script type="application/json" data-ssr-island-props>`) {
			t.Errorf("island %s is not left to the browser:\n%s", name, doc)
		}
		if got := testutil.ToFloat64(metrics.islands.WithLabelValues(name, ReasonUnavailable)); got != 1 {
			t.Errorf("edge_islands_total{island=%s,outcome=renderer-unavailable} = %v, want 1", name, got)
		}
	}
}

// TestIslandsMissedTogetherRenderOnce: a page that misses an island another page's call is
// rendering (the same name, props and code) waits for that call's HTML instead of rendering
// it again; islands with props of its own go in its own call.
func TestIslandsMissedTogetherRenderOnce(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	r := &islandRenderer{}
	r.during = func(context.Context) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
	}
	site, metrics, url := islandSite(t, r)
	first := getAsync(t, url+"?user=ann")
	<-entered // ann's call holds Featured, Cart and Throws
	second := getAsync(t, url+"?user=bob")
	waiting := func(key string) int {
		site.islandFlights.mu.Lock()
		defer site.islandFlights.mu.Unlock()
		if fl := site.islandFlights.m[key]; fl != nil {
			return fl.waiting
		}
		return 0
	}
	featured := islandKey(site.d.shell.BuildID(), "Featured", []byte(`{"ids":[1,2]}`))
	poll.Until(t, "bob's page to join ann's render of Featured", func() bool { return waiting(featured) == 1 })
	close(release)
	for _, a := range []answer{<-first, <-second} {
		if !strings.Contains(a.body, `<div data-ssr-island="Featured"><b>Featured {"ids":[1,2]}</b></div>`) {
			t.Errorf("a page lacks Featured's HTML:\n%s", a.body)
		}
	}
	if len(r.calls) != 2 || strings.Join(r.calls[1], ",") != "Cart" {
		t.Errorf("calls %v: want ann's three islands, then bob's Cart alone", r.calls)
	}
	for _, c := range []struct {
		island, outcome string
		want            float64
	}{{"Featured", "rendered", 1}, {"Featured", "coalesced", 1}, {"Cart", "rendered", 2}, {"Throws", ReasonRenderError, 2}} {
		if got := testutil.ToFloat64(metrics.islands.WithLabelValues(c.island, c.outcome)); got != c.want {
			t.Errorf("edge_islands_total{island=%s,outcome=%s} = %v, want %v", c.island, c.outcome, got, c.want)
		}
	}
}

// TestIslandsCallAsARenderDoes: an islands call carries the request's id and, with tracing
// on, the trace context of a span of its own, a child of the request's span as it reached
// Wrap; it counts in the renders in flight while it runs.
func TestIslandsCallAsARenderDoes(t *testing.T) {
	exporter := tracetest.NewInMemoryExporter()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	var sent metadata.MD
	var inFlight float64
	r := &islandRenderer{}
	site, metrics, _ := islandSite(t, r, func(o *Options) { o.Tracer = provider.Tracer("test") })
	r.during = func(ctx context.Context) {
		sent, _ = metadata.FromOutgoingContext(ctx)
		inFlight = testutil.ToFloat64(metrics.rendersInFlight)
	}
	page := template.Must(template.New("p").Funcs(template.FuncMap{"island": IslandMarker}).Parse(`<p>{{ island "Cart" . }}</p>`))
	wrapped := site.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		page.Execute(w, map[string]int{"n": 1})
	}))
	// The shop's tracing middleware, around Wrap (as otelhttp.NewHandler would be).
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := provider.Tracer("shop").Start(r.Context(), "GET /cart")
		defer span.End()
		wrapped.ServeHTTP(w, r.WithContext(ctx))
	}))
	defer ts.Close()
	req, _ := http.NewRequest("GET", ts.URL, nil)
	req.Header.Set("X-Request-Id", "req-9")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := sent.Get(requestIDMetadata); len(got) != 1 || got[0] != "req-9" {
		t.Errorf("the call carried request id %q, want req-9", got)
	}
	if inFlight != 1 || testutil.ToFloat64(metrics.rendersInFlight) != 0 {
		t.Errorf("edge_renders_in_flight %v during the call, %v after: want 1, 0", inFlight, testutil.ToFloat64(metrics.rendersInFlight))
	}
	spans := map[string]tracetest.SpanStub{}
	for _, span := range exporter.GetSpans() {
		spans[span.Name] = span
	}
	call, shop := spans[islandsSpan], spans["GET /cart"]
	if call.Parent.SpanID() != shop.SpanContext.SpanID() || call.SpanContext.TraceID() != shop.SpanContext.TraceID() {
		t.Errorf("the islands call's span %+v is not a child of the request's %+v", call.Parent, shop.SpanContext)
	}
	if tp := sent.Get("traceparent"); len(tp) != 1 || !strings.Contains(tp[0], call.SpanContext.SpanID().String()) {
		t.Errorf("traceparent %q, want the call span's %s", tp, call.SpanContext.SpanID())
	}
}

// TestIslandMarkerErrors: a bad island name or props fail the template's execution; the
// shop that executes it into a buffer first answers the error with nothing of the page
// written, through Wrap, and no island is rendered.
func TestIslandMarkerErrors(t *testing.T) {
	r := &islandRenderer{}
	site, _, _ := islandSite(t, r)
	funcs := template.FuncMap{"island": IslandMarker}
	tests := []struct {
		name, text string
		data       any
	}{
		{"bad name", `{{ island "no spaces" nil }}`, nil},
		{"props not an object", `{{ island "Cart" . }}`, []int{1}},
		{"props that do not marshal", `{{ island "Cart" . }}`, map[string]any{"f": func() {}}},
		{"raw props not an object", `{{ island "Cart" . }}`, json.RawMessage(`"x"`)},
		{"a template error", `{{ island "Cart" nil }}{{ .Missing.Field }}`, map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := template.Must(template.New("p").Funcs(funcs).Option("missingkey=error").Parse(`<p>the page</p>` + tt.text))
			h := site.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				var b bytes.Buffer
				if err := page.Execute(&b, tt.data); err != nil {
					http.Error(w, "the page could not be written", http.StatusInternalServerError)
					return
				}
				b.WriteTo(w)
			}))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
			if w.Code != http.StatusInternalServerError || w.Body.String() != "the page could not be written\n" {
				t.Errorf("written: %d %q, want the handler's 500 alone", w.Code, w.Body.String())
			}
		})
	}
	if r.callCount() != 0 {
		t.Errorf("%d renderer calls, want none", r.callCount())
	}
}

// TestIslandsPastTheRenderersBound: a response that marks more islands than the renderer
// takes in one call is still the shop's page, with its status: the renderer refuses the
// call, and every island is left to the browser, its props in place, counted as
// bad-request.
func TestIslandsPastTheRenderersBound(t *testing.T) {
	r := &islandRenderer{}
	site, metrics, _ := islandSite(t, r)
	page := template.Must(template.New("many").Funcs(template.FuncMap{"island": IslandMarker}).Parse(
		`<!doctype html><html><head><title>Many</title></head><body>{{ range . }}{{ island "Cart" . }}{{ end }}<p>the end</p></body></html>`))
	many := make([]map[string]int, rendererMaxIslands+1)
	for i := range many {
		many[i] = map[string]int{"n": i} // props of its own: no island joins another's render
	}
	ts := httptest.NewServer(site.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		page.Execute(w, many)
	})))
	defer ts.Close()
	resp, doc := get(t, ts.URL)
	if resp.StatusCode != http.StatusAccepted || !strings.HasSuffix(doc, "<p>the end</p></body></html>") {
		t.Fatalf("status %d, want the handler's 202 and its whole page:\n%.500s", resp.StatusCode, doc)
	}
	if r.callCount() != 1 || len(r.calls[0]) != rendererMaxIslands+1 {
		t.Errorf("calls %d: want one with the %d islands", r.callCount(), rendererMaxIslands+1)
	}
	if n := strings.Count(doc, `<div data-ssr-island="Cart"></div><script type="application/json" data-ssr-island-props>`); n != rendererMaxIslands+1 {
		t.Errorf("%d islands left to the browser, want all %d", n, rendererMaxIslands+1)
	}
	if strings.Contains(doc, "ssr-island:") {
		t.Errorf("a marker is left in the page")
	}
	if got := testutil.ToFloat64(metrics.islands.WithLabelValues("Cart", ReasonBadRequest)); got != rendererMaxIslands+1 {
		t.Errorf("edge_islands_total{island=Cart,outcome=bad-request} = %v, want %d", got, rendererMaxIslands+1)
	}
}

// FuzzIslandMarker: whatever its props, an island's marker is found whole, as one island
// with its name and its props, escaped and equal as JSON to what was given.
func FuzzIslandMarker(f *testing.F) {
	for _, s := range []string{`x`, `</script><!--`, "\u2028-->", `{"a":"-->"}`, `:`, ""} {
		f.Add("Cart", s)
	}
	f.Fuzz(func(t *testing.T, name, text string) {
		props := map[string]string{"text": text}
		mark, err := IslandMarker(name, props)
		if !IsIslandName(name) {
			if err == nil {
				t.Fatalf("name %q accepted", name)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		page := []byte("<p>before</p>" + string(mark) + "<p>after</p>")
		found := findIslands(page)
		if len(found) != 1 || found[0].name != name || string(page[:found[0].start]) != "<p>before</p>" || string(page[found[0].end:]) != "<p>after</p>" {
			t.Fatalf("marker %q: found %+v", mark, found)
		}
		var back, want map[string]string
		plain, _ := json.Marshal(props) // invalid UTF-8 becomes U+FFFD, byte by byte
		json.Unmarshal(plain, &want)
		if err := json.Unmarshal(found[0].props, &back); err != nil || back["text"] != want["text"] {
			t.Fatalf("props %q came back as %q (%v)", text, found[0].props, err)
		}
		if strings.ContainsAny(string(found[0].props), "<>&") {
			t.Fatalf("props %q are not escaped", found[0].props)
		}
	})
}
