package server

import (
	"bytes"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIslandsInTheShopsOwnHTML: behind Wrap, the islands an HTML response marks are rendered
// however the shop writes it (a template executed into the writer, as Gin's c.HTML does; in
// small pieces, a marker across two writes; flushed between islands), the client build
// linked once before the first, with the response's status and headers; no marker reaches
// the client with its props. A response that is not HTML passes through as written.
func TestIslandsInTheShopsOwnHTML(t *testing.T) {
	page := template.Must(template.New("shop").Funcs(template.FuncMap{"island": IslandMarker}).Parse(
		`<!doctype html><html><head><title>Books</title></head><body><h1>Books</h1>` +
			`{{ island "Cart" .Cart }}<p>{{ .Note }}</p>{{ island "Featured" .Featured }}</body></html>`))
	data := map[string]any{"Cart": map[string]any{"count": 2}, "Note": "between", "Featured": map[string]any{"ids": []int{1}}}
	executed := func(t *testing.T) []byte {
		var b bytes.Buffer
		if err := page.Execute(&b, data); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	tests := []struct {
		name  string
		write func(t *testing.T, w http.ResponseWriter)
		calls int
	}{
		{"a template executed into the writer (Gin's c.HTML)", func(t *testing.T, w http.ResponseWriter) {
			if err := page.Execute(w, data); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"in 7-byte pieces", func(t *testing.T, w http.ResponseWriter) {
			for b := executed(t); len(b) > 0; b = b[min(7, len(b)):] {
				w.Write(b[:min(7, len(b))])
			}
		}, 1},
		{"flushed between its islands", func(t *testing.T, w http.ResponseWriter) {
			b := executed(t)
			at := bytes.Index(b, []byte("<p>"))
			w.Write(b[:at])
			http.NewResponseController(w).Flush()
			w.Write(b[at:])
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &islandRenderer{}
			site, _, _ := islandSite(t, r)
			ts := httptest.NewServer(site.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				w.Header().Set("X-Shop", "mine")
				w.Header().Set("Content-Length", "999") // the shop's guess, before the islands
				w.WriteHeader(http.StatusTeapot)
				tt.write(t, w)
			})))
			defer ts.Close()
			resp, doc := get(t, ts.URL)
			if resp.StatusCode != http.StatusTeapot || resp.Header.Get("X-Shop") != "mine" {
				t.Errorf("status %d, X-Shop %q: want the handler's", resp.StatusCode, resp.Header.Get("X-Shop"))
			}
			if r.callCount() != tt.calls {
				t.Errorf("%d renderer calls %v, want %d", r.callCount(), r.calls, tt.calls)
			}
			for _, want := range []string{
				`<h1>Books</h1><link rel="stylesheet" href="/assets/client-1.css">` + "\n" +
					`<script nonce="n0nce" type="module" src="/assets/client-1.js"></script>` + "\n" +
					`<div data-ssr-island="Cart"><b>Cart {"count":2}</b></div><script type="application/json" data-ssr-island-props>{"count":2}</script>`,
				`<p>between</p><div data-ssr-island="Featured"><b>Featured {"ids":[1]}</b></div>`,
			} {
				if !strings.Contains(doc, want) {
					t.Errorf("the page lacks\n%s\nin\n%s", want, doc)
				}
			}
			if strings.Count(doc, "client-1.js") != 1 || strings.Contains(doc, "ssr-island:") {
				t.Errorf("the client build not linked once, or a marker left:\n%s", doc)
			}
		})
	}

	t.Run("not HTML", func(t *testing.T) {
		r := &islandRenderer{}
		site, _, _ := islandSite(t, r)
		marker, _ := IslandMarker("Cart", nil)
		ts := httptest.NewServer(site.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"a":"` + string(marker) + `"}`))
		})))
		defer ts.Close()
		if _, body := get(t, ts.URL); body != `{"a":"`+string(marker)+`"}` || r.callCount() != 0 {
			t.Errorf("got %s with %d calls: want the JSON as written, no call", body, r.callCount())
		}
	})
	t.Run("a file served with its length, and a range of it", func(t *testing.T) {
		r := &islandRenderer{}
		site, _, _ := islandSite(t, r)
		dir := t.TempDir()
		marker, _ := IslandMarker("Cart", nil)
		page := `<!doctype html><p>a static page</p>` + string(marker)
		if err := os.WriteFile(filepath.Join(dir, "static.html"), []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(site.Wrap(http.FileServer(http.Dir(dir))))
		defer ts.Close()
		req, _ := http.NewRequest("GET", ts.URL+"/static.html", nil)
		req.Header.Set("Range", "bytes=0-9")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusPartialContent || string(body) != page[:10] || resp.Header.Get("Content-Length") != "10" {
			t.Errorf("a range: %d %q, Content-Length %q: want the file's first 10 bytes as served", resp.StatusCode, body, resp.Header.Get("Content-Length"))
		}
		if _, body := get(t, ts.URL+"/static.html"); !strings.Contains(body, `<div data-ssr-island="Cart">`) {
			t.Errorf("the whole file's island not rendered:\n%s", body)
		}
	})
	t.Run("a marker cut off at the end", func(t *testing.T) {
		r := &islandRenderer{}
		site, _, _ := islandSite(t, r)
		marker, _ := IslandMarker("Cart", map[string]int{"secret": 1})
		ts := httptest.NewServer(site.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte(`<p>before</p>` + strings.TrimSuffix(string(marker), "-->")))
		})))
		defer ts.Close()
		if _, body := get(t, ts.URL); body != `<p>before</p>` {
			t.Errorf("got %q: want the page without the cut marker and its props", body)
		}
	})
}

// TestCompressHTML: with CompressHTML, the shop's own HTML behind Wrap is compressed in the
// coding the request accepts, its islands rendered; without it, or for a response that is
// not HTML, a HEAD or a 304, it goes as written.
func TestCompressHTML(t *testing.T) {
	page := template.Must(template.New("shop").Funcs(template.FuncMap{"island": IslandMarker}).Parse(
		`<!doctype html><html><head><title>Books</title></head><body>{{ range . }}<p>a book of the shop</p>{{ end }}{{ island "Cart" nil }}</body></html>`))
	books := make([]int, 200)
	tests := []struct {
		name, method, accept string
		option               bool
		status               int
		json                 bool
		want                 string // Content-Encoding
	}{
		{"brotli", "GET", "gzip, deflate, br", true, 200, false, "br"},
		{"gzip", "GET", "gzip", true, 200, false, "gzip"},
		{"none accepted", "GET", "", true, 200, false, ""},
		{"option off", "GET", "gzip, br", false, 200, false, ""},
		{"not HTML", "GET", "gzip, br", true, 200, true, ""},
		{"HEAD", "HEAD", "gzip, br", true, 200, false, ""},
		{"304", "GET", "gzip, br", true, http.StatusNotModified, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			site, _, _ := islandSite(t, &islandRenderer{}, func(o *Options) { o.CompressHTML = tt.option })
			h := site.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if tt.json {
					w.Header().Set("Content-Type", "application/json")
					w.Write([]byte(strings.Repeat(`{"a":1}`, 500)))
					return
				}
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				w.WriteHeader(tt.status)
				if tt.status == http.StatusOK {
					page.Execute(w, books)
				}
			}))
			r := httptest.NewRequest(tt.method, "/", nil)
			if tt.accept != "" {
				r.Header.Set("Accept-Encoding", tt.accept)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if got := rec.Header().Get("Content-Encoding"); got != tt.want {
				t.Fatalf("Content-Encoding %q, want %q", got, tt.want)
			}
			if tt.want == "" {
				return
			}
			body := decode(t, tt.want, rec.Body.String())
			if !strings.Contains(body, `<div data-ssr-island="Cart"><b>Cart {}</b></div>`) || !strings.HasSuffix(body, "</body></html>") {
				t.Errorf("decompressed, the page is not whole with its island:\n%.500s", body)
			}
			if rec.Body.Len() >= len(body)/4 {
				t.Errorf("%d bytes compressed from %d", rec.Body.Len(), len(body))
			}
			if !strings.Contains(rec.Header().Get("Vary"), "Accept-Encoding") {
				t.Errorf("Vary %q", rec.Header().Get("Vary"))
			}
		})
	}
}

// TestScriptNonce: the nonce a policy allows scripts by, from the directive a browser uses.
func TestScriptNonce(t *testing.T) {
	for policy, want := range map[string]string{
		"default-src 'self'; script-src 'nonce-abc' 'strict-dynamic'; style-src 'nonce-zzz'": "abc",
		"default-src 'nonce-def'":                                   "def",
		"script-src-elem 'nonce-elem'; script-src 'nonce-src'":      "elem",
		"SCRIPT-SRC 'self' 'nonce-up'; default-src 'nonce-default'": "up",
		"default-src 'self'":                                        "",
		"":                                                          "",
	} {
		if got := scriptNonce(policy); got != want {
			t.Errorf("scriptNonce(%q) = %q, want %q", policy, got, want)
		}
	}
}
