package routers

// A streamed page with a deferred value, and a page of the shop's own template with two
// islands, behind each router a Go team picks, the way its docs (and docs/go.md) mount
// them: the real renderer over a unix socket, ssr.Server.Wrap around the router.

import (
	"bufio"
	"bytes"
	"context"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-chi/chi/v5"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

// The shop's template: a cached island (FeaturedProducts, declared with a TTL) and one per
// visitor (Greeting).
const booksTemplate = `<!doctype html><html><head><title>Books</title></head><body><h1>Books</h1>` +
	`{{ island "FeaturedProducts" .Featured }}{{ island "Greeting" .Visitor }}</body></html>`

// router mounts the streamed page at /deferred/1 and the template page at /books on a
// router, and returns it.
type router func(t *testing.T, srv *ssr.Server, deferred http.Handler, books func(w http.ResponseWriter, r *http.Request, data any)) http.Handler

func TestBehindEachRouter(t *testing.T) {
	tmpl := template.Must(template.New("books.html").Funcs(ssr.IslandFuncs()).Parse(booksTemplate))
	routers := []struct {
		name  string
		mount router
	}{
		{"ServeMux", func(t *testing.T, _ *ssr.Server, deferred http.Handler, books func(http.ResponseWriter, *http.Request, any)) http.Handler {
			mux := http.NewServeMux()
			mux.Handle("GET /deferred/{n}", deferred)
			mux.HandleFunc("GET /books", func(w http.ResponseWriter, r *http.Request) { books(w, r, nil) })
			return mux
		}},
		{"chi", func(t *testing.T, _ *ssr.Server, deferred http.Handler, books func(http.ResponseWriter, *http.Request, any)) http.Handler {
			r := chi.NewRouter()
			// The route's pattern for the metrics of what no page answers (docs/go.md).
			r.Use(func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
					next.ServeHTTP(w, req)
					ssr.NameRoute(req, chi.RouteContext(req.Context()).RoutePattern())
				})
			})
			r.Method("GET", "/deferred/{n}", deferred)
			r.Get("/books", func(w http.ResponseWriter, r *http.Request) { books(w, r, nil) })
			return r
		}},
	}
	// Gin renders the template itself (c.HTML), in both of its modes: debug mode parses
	// its templates again for every request.
	for _, mode := range []string{gin.DebugMode, gin.ReleaseMode} {
		routers = append(routers, struct {
			name  string
			mount router
		}{"Gin, " + mode + " mode", func(t *testing.T, _ *ssr.Server, deferred http.Handler, _ func(http.ResponseWriter, *http.Request, any)) http.Handler {
			gin.SetMode(mode)
			engine := gin.New()
			// The route's pattern for the metrics of what no page answers (docs/go.md).
			engine.Use(func(c *gin.Context) { ssr.NameRoute(c.Request, c.FullPath()) })
			engine.SetFuncMap(ssr.IslandFuncs())
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "books.html"), []byte(booksTemplate), 0o644); err != nil {
				t.Fatal(err)
			}
			engine.LoadHTMLGlob(filepath.Join(dir, "*.html"))
			engine.GET("/deferred/:n", gin.WrapH(deferred))
			engine.GET("/books", func(c *gin.Context) { c.HTML(http.StatusOK, "books.html", booksData(c.Request)) })
			return engine
		}})
	}

	socket := filepath.Join(t.TempDir(), "r.sock")
	harness.StartRenderer(t, socket, "SSR_RENDERER_BUNDLE="+filepath.Join(harness.RepoRoot, "renderer", "test", "fixtures", "dist", "server.js"))
	for _, rt := range routers {
		t.Run(rt.name, func(t *testing.T) {
			srv, err := ssr.New(ssr.Options{
				RendererAddress: "unix://" + socket, AssetsDir: filepath.Join(harness.RepoRoot, "app", "dist", "client"),
				Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
				Timeouts: ssr.Timeouts{Render: 10 * time.Second, Stream: 20 * time.Second, Hard: 30 * time.Second},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			srv.Island("FeaturedProducts", time.Minute)
			gate := make(chan struct{})
			deferred := srv.Page("deferred", ssr.PageOptions{Stream: true, Load: func(*http.Request) (ssr.Result, error) {
				return ssr.Result{Deferred: map[string]ssr.Deferred{"slow": func(ctx context.Context) (any, error) {
					select {
					case <-gate:
						return map[string]int{"answer": 42}, nil
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}}}, nil
			}})
			// The shop's own handler: its template executed into a buffer, then written
			// through Wrap, which renders its islands.
			books := func(w http.ResponseWriter, r *http.Request, _ any) {
				var page bytes.Buffer
				if err := tmpl.Execute(&page, booksData(r)); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				page.WriteTo(w)
			}
			ts := httptest.NewServer(srv.Wrap(rt.mount(t, srv, deferred, books)))
			defer ts.Close()
			if err := srv.Check(context.Background()); err != nil {
				t.Fatal(err)
			}

			t.Run("the shell before the slow value", func(t *testing.T) {
				resp, err := http.Get(ts.URL + "/deferred/1")
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Cache-Status"), "detail=streamed") {
					t.Fatalf("got %d, Cache-Status %q: want a streamed page", resp.StatusCode, resp.Header.Get("Cache-Status"))
				}
				// The value's function waits for the gate, which opens only once the shell,
				// its boundary pending, has been read: the read returns only if it streamed.
				shell := readUntil(t, resp.Body, `data-testid="pending-slow"`)
				if strings.Contains(shell, "42") {
					t.Fatalf("the value arrived before its function returned:\n%.2000s", shell)
				}
				close(gate)
				rest, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(rest), `data-ssr-deferred="slow">{"value":{"answer":42}}`) {
					t.Errorf("the value did not follow in the same response:\n%.3000s", rest)
				}
			})

			t.Run("the template page counted under its route", func(t *testing.T) {
				if _, err := http.Get(ts.URL + "/books?v=carl"); err != nil {
					t.Fatal(err)
				}
				rec := httptest.NewRecorder()
				srv.Admin().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
				want := `route="/books"` // chi and Gin: named by a middleware
				if rt.name == "ServeMux" {
					want = `route="GET /books"`
				}
				if !strings.Contains(rec.Body.String(), `edge_requests_total{code="200",outcome="ssr",`+want+`}`) {
					t.Errorf("no edge_requests_total{%s}:\n%s", want, grepLines(rec.Body.String(), "edge_requests_total{"))
				}
			})

			t.Run("the template's islands rendered", func(t *testing.T) {
				for _, visitor := range []string{"ann", "bob"} {
					resp, err := http.Get(ts.URL + "/books?v=" + visitor)
					if err != nil {
						t.Fatal(err)
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					doc := string(body)
					for _, want := range []string{
						`<p class="greeting">Hello, <!-- -->` + visitor + `<!-- -->!</p></div>`,
						`<div data-ssr-island="FeaturedProducts"><`,
						`<script type="module" src="/assets/`,
					} {
						if !strings.Contains(doc, want) {
							t.Errorf("%s's page lacks %s:\n%.3000s", visitor, want, doc)
						}
					}
					if strings.Contains(doc, "ssr-island:") || resp.StatusCode != http.StatusOK {
						t.Errorf("%s's page: %d, a marker left in it:\n%.3000s", visitor, resp.StatusCode, doc)
					}
				}
			})
		})
	}
}

// booksData is the template's data for r's visitor.
func booksData(r *http.Request) any {
	return map[string]any{
		"Featured": map[string]any{"products": []map[string]any{{"id": 1, "name": "The Go Programming Language", "price": "39.99 EUR"}}},
		"Visitor":  map[string]string{"name": r.URL.Query().Get("v")},
	}
}

// readUntil reads body until it holds want, and returns what it read; failing the test if
// the body ends first.
func readUntil(t *testing.T, body io.Reader, want string) string {
	t.Helper()
	var got strings.Builder
	br := bufio.NewReader(body)
	buf := make([]byte, 4096)
	for !strings.Contains(got.String(), want) {
		n, err := br.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("the body ended (%v) before %s:\n%.3000s", err, want, got.String())
		}
	}
	return got.String()
}

// grepLines are the lines of s that hold sub.
func grepLines(s, sub string) string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}
