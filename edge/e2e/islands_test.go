package e2e

import (
	"context"
	"html/template"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/logtest"
	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

// islandPage is a Go template with four islands of the fixture bundle: Greeting twice (its
// HTML stored for an hour, tagged "greetings"), Throws (its component throws) and Flaky.
var islandPage = template.Must(template.New("order").Funcs(ssr.IslandFuncs()).Parse(`<!doctype html>
<html><head><title>Order {{.ID}}</title></head><body><h1>Order {{.ID}}</h1>
{{ island "Greeting" .Ann }}{{ island "Greeting" .Bob }}{{ island "Throws" nil }}{{ island "Flaky" .Flaky }}
</body></html>`))

type islandSite struct {
	url      string
	srv      *ssr.Server
	renderer *harness.Process
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
	srv.Island("Greeting", ssr.IslandOptions{TTL: time.Hour, Tags: []string{"greetings"}})
	srv.Island("Throws", ssr.IslandOptions{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		data := map[string]any{
			"ID": r.PathValue("id"), "Ann": map[string]string{"name": "Ann"}, "Bob": map[string]string{"name": "Bob"},
			"Flaky": map[string]any{"fail": false, "note": "made here"},
		}
		if err := srv.Template(w, r, 0, islandPage, data); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	ts := httptest.NewServer(srv.Wrap(mux))
	t.Cleanup(ts.Close)
	if err := srv.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &islandSite{url: ts.URL, srv: srv, renderer: renderer}
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
	again := harness.Get(t, site.url+"/orders/8")
	if n := greetings() - stored; n != 0 || !strings.Contains(islandRoot(t, again.Text, "Greeting", 2), "Bob") {
		t.Errorf("the next page rendered Greeting %v times, want its stored HTML", n)
	}
	if !strings.Contains(again.Header.Get("Server-Timing"), `desc="1 rendered, 2 cached, 1 left to the browser"`) {
		t.Errorf("Server-Timing %q", again.Header.Get("Server-Timing"))
	}
	if n, err := site.srv.Purge(context.Background(), ssr.ByTag("greetings")); err != nil || n != 2 {
		t.Fatalf("Purge(ByTag(greetings)) = %d, %v; want Greeting's two copies", n, err)
	}
	flaky := sum(scrape(t, metrics), "renderer_renders_total", `page="island:Flaky"`)
	harness.Get(t, site.url+"/orders/9")
	if n := greetings() - stored; n != 2 {
		t.Errorf("after the purge Greeting rendered %v times, want 2", n)
	}
	if n := sum(scrape(t, metrics), "renderer_renders_total", `page="island:Flaky"`) - flaky; n != 1 {
		t.Errorf("Flaky rendered %v times, want 1 (it is not stored; the purge did not touch it)", n)
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

// TestIslandNamesAreChecked: an island the bundle lacks stops the start, named, as a page does.
func TestIslandNamesAreChecked(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "r.sock")
	startRenderer(t, socket)
	srv, err := ssr.New(ssr.Options{RendererAddress: "unix://" + socket, AssetsDir: assetsDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.Island("Greting", ssr.IslandOptions{})
	if err := srv.Check(context.Background()); err == nil || !strings.Contains(err.Error(), `"island:Greting"`) {
		t.Errorf("Check: %v, want it to name island:Greting", err)
	}
}

// islandMetrics serves one page of islandPage, whose Throws island fails, from a Go server
// of the package's own on the renderer at socket, and returns the URL of its metrics.
func islandMetrics(t *testing.T, socket string) string {
	t.Helper()
	srv, err := ssr.New(ssr.Options{RendererAddress: "unix://" + socket, AssetsDir: assetsDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	w := httptest.NewRecorder()
	if err := srv.Template(w, httptest.NewRequest("GET", "/orders/1", nil), 0, islandPage, map[string]any{"ID": 1}); err != nil {
		t.Fatal(err)
	}
	admin := httptest.NewServer(srv.Admin())
	t.Cleanup(admin.Close)
	return admin.URL + "/metrics"
}
