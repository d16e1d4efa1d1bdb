package e2e

import (
	"context"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

// islandsPerPage is how many islands the benchmark's page has.
const islandsPerPage = 10

// BenchmarkIslands measures what a Go template's islands cost against the same components
// rendered as one page, with the real renderer (the fixture bundle, 2 threads): CPU per
// page of the Go process (getrusage) and of the renderer's (/proc/PID/stat), and the time
// to one page, requests one at a time, each served by calling the handler (no client in
// the measurement). Every case is served behind Server.Wrap, as a shop serves its handler,
// so that the cases differ by their islands alone. The page shows 10 FeaturedProducts
// islands, each with its own three products:
//
//	template        the template alone, no islands
//	islands-cached  the template with its 10 islands, every one stored: no renderer call
//	islands         the same 10 islands rendered, in one RenderIslands call
//	page            the same 10 components as one page of the bundle (Server.Render), uncached
//
// make bench runs it (bench/bench.sh) and prints the ratios; by hand:
//
//	cd edge && go test ./e2e -run '^$' -bench Islands -benchtime 400x -count 5
func BenchmarkIslands(b *testing.B) {
	pid, newServer := benchRenderer(b)
	// Typed, as a Go shop's props are.
	type product struct {
		ID    int    `json:"id"`
		Name  string `json:"name"`
		Price string `json:"price"`
	}
	type featured struct {
		Products []product `json:"products"`
	}
	type island struct {
		Name  string   `json:"name"`
		Props featured `json:"props"`
	}
	var islands []island
	for i := range islandsPerPage {
		var products []product
		for j := range 3 {
			id := 3*i + j + 1
			products = append(products, product{ID: id, Name: "Product " + strconv.Itoa(id), Price: fmt.Sprintf("%d.99 EUR", id)})
		}
		islands = append(islands, island{Name: "FeaturedProducts", Props: featured{Products: products}})
	}
	const layout = `<!doctype html><html><head><title>Featured</title></head><body><h1>Featured</h1>%s</body></html>`
	var marks strings.Builder
	for i := range islands {
		fmt.Fprintf(&marks, `<section>{{ island "FeaturedProducts" (index . %d).Props }}</section>`, i)
	}
	withIslands := template.Must(template.New("islands").Funcs(ssr.IslandFuncs()).Parse(fmt.Sprintf(layout, marks.String())))
	alone := template.Must(template.New("alone").Parse(fmt.Sprintf(layout, strings.Repeat("<section></section>", islandsPerPage))))

	cached, uncached, pages := newServer(), newServer(), newServer()
	cached.Island("FeaturedProducts", time.Hour)
	execute := func(t *template.Template) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { t.Execute(w, islands) }
	}
	cases := []struct {
		name  string
		serve http.Handler
	}{
		{"template", uncached.Wrap(execute(alone))},
		{"islands-cached", cached.Wrap(execute(withIslands))},
		{"islands", uncached.Wrap(execute(withIslands))},
		{"page", pages.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			pages.Render(w, r, "islands-page", ssr.Result{Props: map[string]any{"islands": islands}})
		}))},
	}
	serve := func(h http.Handler) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/featured", nil).WithContext(context.Background()))
		return w
	}
	// Every case warm before any is measured (the JIT in the workers, code the cases share,
	// the cache of islands-cached), so that the first measured does not pay for the others.
	for _, c := range cases {
		for range 50 {
			if w := serve(c.serve); w.Code != 200 || w.Header().Get("X-Ssr-Fallback") != "" || strings.Contains(w.Body.String(), `"></div><script type="application/json" data-ssr-island-props>`) {
				b.Fatalf("%s: %d %v: a page not wholly server-rendered", c.name, w.Code, w.Header())
			}
		}
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			goBefore, rendererBefore := processCPU(b, 0), processCPU(b, pid)
			b.ResetTimer()
			for b.Loop() {
				serve(c.serve)
			}
			b.StopTimer()
			goCPU, rendererCPU := processCPU(b, 0)-goBefore, processCPU(b, pid)-rendererBefore
			perPage := func(d time.Duration) float64 { return float64(d) / 1e6 / float64(b.N) }
			b.ReportMetric(perPage(goCPU+rendererCPU), "cpu-ms/page")
			b.ReportMetric(perPage(goCPU), "go-cpu-ms/page")
			b.ReportMetric(perPage(rendererCPU), "renderer-cpu-ms/page")
		})
	}
}

// benchRenderer starts the real renderer (the fixture bundle, 2 threads) for a benchmark:
// its pid, and a function making servers over it, each closed when the benchmark ends. Its
// workers are never recycled: a worker's start (about 0.06 ms a request over a case of 4,000)
// would land in whichever case ran past max_renders, not in the case that used it.
func benchRenderer(b *testing.B) (int, func() *ssr.Server) {
	socket := filepath.Join(b.TempDir(), "r.sock")
	renderer := harness.StartRenderer(b, socket, "SSR_RENDERER_BUNDLE="+fixtureBundle(), "SSR_RENDERER_THREADS=2", "SSR_RENDERER_MAX_RENDERS=0")
	// Stopped, not killed, before the harness's kill: a renderer run with NODE_OPTIONS=--cpu-prof
	// writes its threads' profiles only as it exits.
	b.Cleanup(func() {
		renderer.Signal(syscall.SIGTERM)
		renderer.WaitExit(30 * time.Second)
	})
	pid := int(renderer.WaitJSON("the renderer's pid", func(f map[string]any) bool { return f["msg"] == "ready" })["pid"].(float64))
	return pid, func() *ssr.Server {
		srv, err := ssr.New(ssr.Options{
			RendererAddress: "unix://" + socket, AssetsDir: assetsDir(), Logger: slog.New(slog.DiscardHandler),
			Timeouts: ssr.Timeouts{Render: 10 * time.Second, Hard: 20 * time.Second},
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { srv.Close() })
		return srv
	}
}

// processCPU is the CPU time, user and system, of process pid so far; 0 is this process.
func processCPU(b *testing.B, pid int) time.Duration {
	if pid == 0 {
		var u syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
			b.Fatal(err)
		}
		return time.Duration(u.Utime.Nano() + u.Stime.Nano())
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// clockTicks is the kernel's USER_HZ, the unit of /proc's CPU times (100 on Linux).
const clockTicks = 100

// BenchmarkOneIsland measures what one per-visitor island costs a Go template under load: 50
// clients at once over HTTP with keep-alive, against the real renderer (the fixture bundle,
// 2 threads), the template alone against the same template with one island whose props are
// the visitor's own (Greeting, never cached), and with ten such islands (rendered in one call:
// what a call costs against what an island does), each case behind Server.Wrap. Throughput
// is 1e9 / ns/op (RunParallel); CPU per request of the Go process (the clients and the
// server) and of the renderer.
//
//	cd edge && go test ./e2e -run '^$' -bench OneIsland -benchtime 4000x -count 3
func BenchmarkOneIsland(b *testing.B) {
	pid, newServer := benchRenderer(b)
	srv := newServer()
	const layout = `<!doctype html><html><head><title>Shop</title></head><body><h1>Books</h1>%s<ul>{{ range .Books }}<li>{{ . }}</li>{{ end }}</ul></body></html>`
	withIsland := template.Must(template.New("island").Funcs(ssr.IslandFuncs()).Parse(fmt.Sprintf(layout, `{{ island "Greeting" .Visitor }}`)))
	withTen := template.Must(template.New("ten").Funcs(ssr.IslandFuncs()).Parse(fmt.Sprintf(layout, strings.Repeat(`{{ island "Greeting" .Visitor }}`, 10))))
	alone := template.Must(template.New("alone").Parse(fmt.Sprintf(layout, `<p>Hello, {{ .Visitor.Name }}!</p>`)))
	type visitor struct {
		Name string `json:"name"`
	}
	type data struct {
		Visitor visitor
		Books   []string
	}
	books := []string{"The Go Programming Language", "Concurrency in Go", "Learning Go", "100 Go Mistakes"}
	dataFor := func(r *http.Request) data { return data{Visitor: visitor{Name: r.URL.Query().Get("v")}, Books: books} }
	execute := func(t *template.Template) http.Handler {
		return srv.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Execute(w, dataFor(r)) }))
	}
	cases := []struct {
		name  string
		serve http.Handler
	}{
		{"template", execute(alone)},
		{"one-island", execute(withIsland)},
		{"ten-islands", execute(withTen)},
	}
	const clients = 50
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ts := httptest.NewServer(c.serve)
			defer ts.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
			defer client.CloseIdleConnections()
			var visitors atomic.Int64
			get := func() error {
				resp, err := client.Get(ts.URL + "/?v=visitor-" + strconv.FormatInt(visitors.Add(1), 10))
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				if err == nil && (resp.StatusCode != 200 || !strings.Contains(string(body), "Hello, ")) {
					err = fmt.Errorf("%d %v: the visitor not greeted", resp.StatusCode, resp.Header)
				}
				return err
			}
			for range 100 { // warm: connections, the workers' JIT
				if err := get(); err != nil {
					b.Fatal(err)
				}
			}
			b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			goBefore, rendererBefore := processCPU(b, 0), processCPU(b, pid)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := get(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			// The Go process is the clients and the server together.
			goCPU, rendererCPU := processCPU(b, 0)-goBefore, processCPU(b, pid)-rendererBefore
			b.ReportMetric(float64(goCPU)/1e6/float64(b.N), "go-cpu-ms/req")
			b.ReportMetric(float64(rendererCPU)/1e6/float64(b.N), "renderer-cpu-ms/req")
		})
	}
}
