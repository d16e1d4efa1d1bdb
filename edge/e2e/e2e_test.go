package e2e

import (
	"context"
	"encoding/json"
	"html"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
)

var (
	dataScript = regexp.MustCompile(`(?s)<script id="__SSR_DATA__" type="application/json">(.*?)</script>`)
	rootDiv    = regexp.MustCompile(`(?s)<div id="root">(.*)</div>\n<script id="__SSR_DATA__"`)
	scriptTag  = regexp.MustCompile(`<script type="module" src="(/assets/[^"]+)">`)
)

type hydrationData struct {
	Page   string            `json:"page"`
	URL    string            `json:"url"`
	Params map[string]string `json:"params"`
	Props  json.RawMessage   `json:"props"`
}

func parseDocument(t *testing.T, body string) (root string, data hydrationData) {
	t.Helper()
	m := dataScript.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no __SSR_DATA__ script in:\n%.2000s", body)
	}
	if err := json.Unmarshal([]byte(m[1]), &data); err != nil {
		t.Fatalf("__SSR_DATA__ is not JSON: %v", err)
	}
	if r := rootDiv.FindStringSubmatch(body); r != nil {
		root = r[1]
	}
	return root, data
}

// TestStack runs one renderer and one edge for every case that leaves them healthy.
func TestStack(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	startRenderer(t, socket)
	edge := startEdge(t, socket)

	t.Run("home is server-rendered with hydration props", func(t *testing.T) {
		r := harness.Get(t, edge.url+"/")
		assertSSR(t, r, 200)
		root, data := parseDocument(t, r.Text)
		var props struct {
			Products []struct {
				Name string `json:"name"`
			} `json:"products"`
		}
		if err := json.Unmarshal(data.Props, &props); err != nil || len(props.Products) != 100 {
			t.Fatalf("got %d products in props (%v), want 100", len(props.Products), err)
		}
		for _, p := range props.Products {
			if !strings.Contains(root, html.EscapeString(p.Name)) {
				t.Errorf("product %q from props is not in the rendered HTML", p.Name)
			}
		}
		if n := strings.Count(root, `data-testid="add-to-cart"`); n != 100 {
			t.Errorf("got %d add-to-cart buttons, want 100", n)
		}
		if !strings.Contains(r.Text, "<title>") || strings.Index(r.Text, "<title>") > strings.Index(r.Text, "</head>") {
			t.Errorf("the page's <title> is not in <head>")
		}
		// Every phase of the render, the renderer's own time coming in its trailer.
		timing := r.Header.Get("Server-Timing")
		if !regexp.MustCompile(`^cache;desc=miss, queue;dur=[\d.]+, load;dur=[\d.]+, render;dur=[\d.]+, worker;dur=[\d.]+;desc=\d+, renderer;dur=[\d.]+, hop;dur=[\d.]+$`).MatchString(timing) {
			t.Errorf("got Server-Timing %q, want every phase", timing)
		}
	})

	t.Run("103 Early Hints preload the build's files before the page", func(t *testing.T) {
		var links []string
		trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			if code == http.StatusEarlyHints {
				links = append(links, h.Get("Link"))
			}
			return nil
		}}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", edge.url+"/products/8", nil)
		resp, err := harness.NoRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || len(links) != 1 || !strings.Contains(links[0], "rel=modulepreload") || !strings.Contains(links[0], "/assets/") {
			t.Errorf("got %d after 103s with Link %q, want one 103 preloading the build's scripts, then 200", resp.StatusCode, links)
		}
	})

	t.Run("detail page", func(t *testing.T) {
		r := harness.Get(t, edge.url+"/products/7")
		assertSSR(t, r, 200)
		root, data := parseDocument(t, r.Text)
		var props struct {
			Product struct {
				ID   int    `json:"id"`
				Name string `json:"name"`
			} `json:"product"`
		}
		json.Unmarshal(data.Props, &props)
		if data.Page != "product" || data.Params["id"] != "7" || props.Product.ID != 7 {
			t.Errorf("got page %q params %v product %+v, want product 7", data.Page, data.Params, props.Product)
		}
		if props.Product.Name == "" || !strings.Contains(root, html.EscapeString(props.Product.Name)) {
			t.Errorf("product name %q is not in the rendered HTML", props.Product.Name)
		}
	})

	for _, path := range []string{"/products/99999", "/products/abc", "/no/such/page"} {
		t.Run("not found "+path, func(t *testing.T) {
			r := harness.Get(t, edge.url+path)
			assertSSR(t, r, 404)
			if root, data := parseDocument(t, r.Text); data.Page != "not-found" || root == "" {
				t.Errorf("got page %q with root %q, want the server-rendered not-found page", data.Page, root)
			}
		})
	}

	t.Run("props cannot break out of the data script", func(t *testing.T) {
		r := harness.Get(t, edge.url+"/xss")
		assertSSR(t, r, 200)
		_, data := parseDocument(t, r.Text)
		var props struct{ Text string }
		json.Unmarshal(data.Props, &props)
		if !strings.Contains(props.Text, "</script><script>alert(1)</script>") || !strings.Contains(props.Text, "\u2028") {
			t.Errorf("props did not round-trip: %q", props.Text)
		}
		m := dataScript.FindStringSubmatch(r.Text)[1]
		for _, raw := range []string{"<", ">", "\u2028", "\u2029"} {
			if strings.Contains(m, raw) {
				t.Errorf("data script holds %q unescaped", raw)
			}
		}
	})

	t.Run("redirect chosen by the page", func(t *testing.T) {
		r := harness.Get(t, edge.url+"/redirect")
		if r.StatusCode != 302 || r.Header.Get("Location") != "/" {
			t.Errorf("got %d Location %q, want 302 to /", r.StatusCode, r.Header.Get("Location"))
		}
	})

	t.Run("page that throws gets the client-side-render shell", func(t *testing.T) {
		assertFallback(t, harness.Get(t, edge.url+"/throws"), 200, "render-error")
		assertSSR(t, harness.Get(t, edge.url+"/"), 200) // and nothing else notices
	})

	t.Run("page slower than render_timeout falls back at the render timeout", func(t *testing.T) {
		// "timeout" is the render timeout's reason: a request that waited for the 1 s render
		// would have been served it.
		assertFallback(t, harness.Get(t, edge.url+"/sleep?ms=1000"), 200, "timeout")
	})

	t.Run("assets are served immutable", func(t *testing.T) {
		m := scriptTag.FindStringSubmatch(harness.Get(t, edge.url+"/").Text)
		if m == nil {
			t.Fatal("no module script in the document")
		}
		r := harness.Get(t, edge.url+m[1])
		if r.StatusCode != 200 || r.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || len(r.Text) == 0 {
			t.Errorf("got %d Cache-Control %q, %d bytes", r.StatusCode, r.Header.Get("Cache-Control"), len(r.Text))
		}
		if r := harness.Get(t, edge.url+"/assets/..%2f..%2fmanifest.json"); r.StatusCode != 404 {
			t.Errorf("traversal: got %d, want 404", r.StatusCode)
		}
	})

	t.Run("malformed requests get 4xx", func(t *testing.T) {
		for _, tc := range []struct {
			request string
			want    string
		}{
			{"GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400"},
			{"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 70000) + "\r\n\r\n", "HTTP/1.1 431"},
			{"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", "HTTP/1.1 405"},
		} {
			conn, err := net.Dial("tcp", strings.TrimPrefix(edge.url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			conn.Write([]byte(tc.request))
			buf := make([]byte, 64)
			n, _ := conn.Read(buf)
			conn.Close()
			if !strings.HasPrefix(string(buf[:n]), tc.want) {
				t.Errorf("%.30q: got %q, want %q", tc.request, buf[:n], tc.want)
			}
		}
	})

	t.Run("admin health and readiness", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz"} {
			if r := harness.Get(t, edge.admin+path); r.StatusCode != 200 {
				t.Errorf("%s: got %d, want 200", path, r.StatusCode)
			}
		}
		if r := harness.Get(t, edge.url+"/healthz"); r.StatusCode != 404 {
			t.Errorf("public /healthz: got %d, want 404 (admin endpoints are not public)", r.StatusCode)
		}
	})
}

// TestRendererKilledAndRestarted kills the renderer with SIGKILL (the socket file stays
// behind), checks the edge serves the client-side-render shell at once, then starts a new
// renderer on the same path and checks server rendering comes back.
func TestRendererKilledAndRestarted(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	renderer := startRenderer(t, socket)
	edge := startEdge(t, socket)
	assertSSR(t, harness.Get(t, edge.url+"/"), 200)

	renderer.Kill()
	// At once: a request that waited for the renderer to come back would fall back at the
	// render timeout, with reason "timeout".
	for range 3 {
		assertFallback(t, harness.Get(t, edge.url+"/"), 200, "renderer-unavailable")
	}

	startRenderer(t, socket)
	var r harness.Response
	poll.Until(t, "server rendering back after the renderer restarted", func() bool {
		r = harness.Get(t, edge.url+"/")
		return r.Header.Get("X-SSR-Fallback") == ""
	})
	assertSSR(t, r, 200)
}

func assertSSR(t *testing.T, r harness.Response, status int) {
	t.Helper()
	if r.StatusCode != status {
		t.Errorf("got status %d, want %d", r.StatusCode, status)
	}
	if fb := r.Header.Get("X-SSR-Fallback"); fb != "" {
		t.Fatalf("got fallback %q, want a server-rendered page", fb)
	}
	if root, data := parseDocument(t, r.Text); strings.TrimSpace(root) == "" || len(data.Props) == 0 {
		t.Errorf("want server-rendered markup and props, got root %.100q props %.100q", root, data.Props)
	}
}

func assertFallback(t *testing.T, r harness.Response, status int, reason string) {
	t.Helper()
	if r.StatusCode != status || r.Header.Get("X-SSR-Fallback") != reason || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("got %d X-SSR-Fallback %q Cache-Control %q, want %d %q no-store",
			r.StatusCode, r.Header.Get("X-SSR-Fallback"), r.Header.Get("Cache-Control"), status, reason)
	}
	root, data := parseDocument(t, r.Text)
	if root != "" || data.Props != nil {
		t.Errorf("want the client-side-render shell (empty root, no props), got root %.100q", root)
	}
}
