package e2e

import (
	"bytes"
	"context"
	"html/template"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/logtest"
	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

// islandPage is a Go template with four islands of the fixture bundle: Greeting twice (its
// HTML stored for an hour), Throws (its component throws) and Flaky.
var islandPage = template.Must(template.New("order").Funcs(ssr.IslandFuncs()).Parse(`<!doctype html>
<html><head><title>Order {{.ID}}</title></head><body><h1>Order {{.ID}}</h1>
{{ island "Greeting" .Ann }}{{ island "Greeting" .Bob }}{{ island "Throws" nil }}{{ island "Flaky" .Flaky }}
</body></html>`))

// manyIslands is a Go template with one Greeting island per element of its data.
var manyIslands = template.Must(template.New("many").Funcs(ssr.IslandFuncs()).Parse(`<!doctype html>
<html><head><title>Many</title></head><body>{{ range . }}{{ island "Greeting" . }}{{ end }}<p>the end</p></body></html>`))

type islandSite struct {
	url, admin string
	srv        *ssr.Server
	renderer   *harness.Process
}

func startIslandSite(t *testing.T) *islandSite {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "r.sock")
	renderer := startRenderer(t, socket)
	srv, err := ssr.New(ssr.Options{
		RendererAddress: "unix://" + socket, AssetsDir: assetsDir(), Logger: slog.New(slog.NewJSONHandler(&logtest.Buffer{}, nil)),
		// Far beyond a loaded runner's: only the renderer's absence may leave islands out.
		Timeouts: ssr.Timeouts{Render: 10 * time.Second, Hard: 20 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	srv.Island("Greeting", time.Hour)
	srv.Island("Throws", 0)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		data := map[string]any{
			"ID": r.PathValue("id"), "Ann": map[string]string{"name": "Ann"}, "Bob": map[string]string{"name": "Bob"},
			"Flaky": map[string]any{"fail": false, "note": "made here"},
		}
		// The template executed into a buffer first: an error in it is answered with
		// nothing of the page written.
		var page bytes.Buffer
		if err := islandPage.Execute(&page, data); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		page.WriteTo(w)
	})
	mux.HandleFunc("GET /many/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		names := make([]map[string]string, n)
		for i := range names {
			names[i] = map[string]string{"name": "visitor " + strconv.Itoa(i)}
		}
		w.WriteHeader(http.StatusAccepted)
		manyIslands.Execute(w, names)
	})
	ts := httptest.NewServer(srv.Wrap(mux))
	t.Cleanup(ts.Close)
	admin := httptest.NewServer(srv.Admin())
	t.Cleanup(admin.Close)
	if err := srv.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &islandSite{url: ts.URL, admin: admin.URL, srv: srv, renderer: renderer}
}

// islandRoot is what an island's root holds in doc.
func islandRoot(t *testing.T, doc, name string, nth int) string {
	t.Helper()
	open := `<div data-ssr-island="` + name + `">`
	rest := doc
	for range nth {
		i := strings.Index(rest, open)
		if i < 0 {
			t.Fatalf("no island %s #%d in\n%s", name, nth, doc)
		}
		rest = rest[i+len(open):]
	}
	return rest[:strings.Index(rest, "</div><script")]
}

// TestIslandsOfAGoTemplate: a Go template's islands come from one renderer call (counted
// there), each in its place; the one whose component throws is left to the browser alone,
// its props in place. Stored islands cost no render on the next page, and a purge by tag
// renders only its island again. With the renderer stopped, the page is still the shop's,
// 200, every island left to the browser.
func TestIslandsOfAGoTemplate(t *testing.T) {
	site := startIslandSite(t)
	metrics := site.renderer.HTTPURL("/metrics")
	before := scrape(t, metrics)

	got := harness.Get(t, site.url+"/orders/7")
	if got.StatusCode != 200 || !strings.Contains(got.Text, "<h1>Order 7</h1>") {
		t.Fatalf("status %d:\n%s", got.StatusCode, got.Text)
	}
	for _, want := range []struct {
		name string
		nth  int
		html string
	}{
		{"Greeting", 1, "Hello, <!-- -->Ann<!-- -->!"},
		{"Greeting", 2, "Hello, <!-- -->Bob<!-- -->!"},
		{"Flaky", 1, "made here"},
	} {
		if root := islandRoot(t, got.Text, want.name, want.nth); !strings.Contains(root, want.html) {
			t.Errorf("island %s #%d holds %q, want %q", want.name, want.nth, root, want.html)
		}
	}
	if root := islandRoot(t, got.Text, "Throws", 1); root != "" {
		t.Errorf("the throwing island's root holds %q, want it left to the browser", root)
	}
	if !strings.Contains(got.Text, `<div data-ssr-island="Throws"></div><script type="application/json" data-ssr-island-props>{}</script>`) {
		t.Errorf("the throwing island's props are not in place:\n%s", got.Text)
	}
	after := scrape(t, metrics)
	if n := sum(after, "renderer_island_calls_total") - sum(before, "renderer_island_calls_total"); n != 1 {
		t.Errorf("%v RenderIslands calls for one page, want 1", n)
	}
	if n := sum(after, "renderer_renders_total", `page="island:Greeting"`) - sum(before, "renderer_renders_total", `page="island:Greeting"`); n != 2 {
		t.Errorf("%v renders of Greeting, want 2", n)
	}

	greetings := func() float64 { return sum(scrape(t, metrics), "renderer_renders_total", `page="island:Greeting"`) }
	stored := greetings()
	edgeBefore := scrape(t, site.admin+"/metrics")
	again := harness.Get(t, site.url+"/orders/8")
	if n := greetings() - stored; n != 0 || !strings.Contains(islandRoot(t, again.Text, "Greeting", 2), "Bob") {
		t.Errorf("the next page rendered Greeting %v times, want its stored HTML", n)
	}
	edgeAfter := scrape(t, site.admin+"/metrics")
	for _, c := range []struct {
		island, outcome string
		want            float64
	}{{"Greeting", "hit", 2}, {"Flaky", "rendered", 1}, {"Throws", "render-error", 1}} {
		labels := []string{`island="` + c.island + `"`, `outcome="` + c.outcome + `"`}
		if n := sum(edgeAfter, "edge_islands_total", labels...) - sum(edgeBefore, "edge_islands_total", labels...); n != c.want {
			t.Errorf("the next page: edge_islands_total{island=%s,outcome=%s} +%v, want +%v", c.island, c.outcome, n, c.want)
		}
	}

	site.renderer.Kill()
	down := harness.Get(t, site.url+"/orders/10")
	if down.StatusCode != 200 || !strings.Contains(down.Text, "<h1>Order 10</h1>") {
		t.Fatalf("with the renderer stopped: status %d:\n%s", down.StatusCode, down.Text)
	}
	for _, name := range []string{"Throws", "Flaky"} {
		if root := islandRoot(t, down.Text, name, 1); root != "" {
			t.Errorf("with the renderer stopped, %s holds %q", name, root)
		}
	}
}

// TestIslandsPastTheRenderersBound: a page that marks more islands than the renderer takes
// in one call (256) is still the shop's, with its status and all of its HTML: the renderer
// refuses the call, and every island is left to the browser, its props in place, counted
// in edge_islands_total as bad-request.
func TestIslandsPastTheRenderersBound(t *testing.T) {
	site := startIslandSite(t)
	const n = 257
	before := scrape(t, site.admin+"/metrics")
	got := harness.Get(t, site.url+"/many/"+strconv.Itoa(n))
	if got.StatusCode != http.StatusAccepted || !strings.Contains(got.Text, "<p>the end</p></body></html>") {
		t.Fatalf("status %d, want the handler's 202 and its whole page:\n%.2000s", got.StatusCode, got.Text)
	}
	if left := strings.Count(got.Text, `<div data-ssr-island="Greeting"></div><script type="application/json" data-ssr-island-props>`); left != n {
		t.Errorf("%d islands left to the browser, want all %d", left, n)
	}
	if strings.Contains(got.Text, "ssr-island:") {
		t.Errorf("a marker is left in the page")
	}
	after := scrape(t, site.admin+"/metrics")
	label := `outcome="bad-request"`
	if c := sum(after, "edge_islands_total", label) - sum(before, "edge_islands_total", label); c != n {
		t.Errorf("edge_islands_total{outcome=bad-request} +%v, want +%d", c, n)
	}
	// Within the bound, the same page is rendered.
	if ok := harness.Get(t, site.url+"/many/3"); strings.Count(ok.Text, "Hello, <!-- -->visitor ") != 3 {
		t.Errorf("3 islands: not all rendered:\n%.2000s", ok.Text)
	}
}

// TestIslandNamesAreChecked: an island the bundle lacks stops the start, named, as a page does.
func TestIslandNamesAreChecked(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "r.sock")
	startRenderer(t, socket)
	srv, err := ssr.New(ssr.Options{RendererAddress: "unix://" + socket, AssetsDir: assetsDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.Island("Greting", 0)
	if err := srv.Check(context.Background()); err == nil || !strings.Contains(err.Error(), `"island:Greting"`) {
		t.Errorf("Check: %v, want it to name island:Greting", err)
	}
}

// islandMetrics serves one page of islandPage, whose Throws island fails, from a Go server
// of the package's own on the renderer at socket (its handler behind Wrap), and returns the
// URL of its metrics.
func islandMetrics(t *testing.T, socket string) string {
	t.Helper()
	srv, err := ssr.New(ssr.Options{RendererAddress: "unix://" + socket, AssetsDir: assetsDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	w := httptest.NewRecorder()
	srv.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if err := islandPage.Execute(w, map[string]any{"ID": 1}); err != nil {
			t.Error(err)
		}
	})).ServeHTTP(w, httptest.NewRequest("GET", "/orders/1", nil))
	if !strings.Contains(w.Body.String(), `<div data-ssr-island="Throws"></div>`) {
		t.Fatalf("the page's islands were not rendered:\n%s", w.Body.String())
	}
	admin := httptest.NewServer(srv.Admin())
	t.Cleanup(admin.Close)
	return admin.URL + "/metrics"
}
