package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

// The demo's streaming page (app/src/pages/ProductReviews.jsx) shows its reviews in a
// Suspense boundary. The renderer fetches each product's reviews from a gate this test
// serves (SSR_DEMO_REVIEWS_URL), which answers only once the test opens it: "the shell
// arrives before the boundary resolves" is then an order of events, not a race with a clock.
const (
	shellMark    = `data-testid="reviews-loading"`
	reviewsMark  = `data-testid="reviews"`
	abortedMark  = `c.data="$!"`
	streamedMark = "detail=streamed"
)

// gates holds back the reviews of each product until opened.
type gates struct {
	mu sync.Mutex
	m  map[string]chan struct{} // guarded by mu
}

func (g *gates) gate(id string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]chan struct{}{}
	}
	if g.m[id] == nil {
		g.m[id] = make(chan struct{})
	}
	return g.m[id]
}

func (g *gates) open(id string) { close(g.gate(id)) }

func (g *gates) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case <-g.gate(r.URL.Query().Get("product")):
	case <-r.Context().Done():
	}
}

func startGates(t *testing.T) (*gates, string) {
	g := &gates{}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, "SSR_DEMO_REVIEWS_URL=" + srv.URL
}

// streamClient neither asks for compression nor decompresses: what the server sends is read.
var streamClient = &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: time.Minute}

// reading is a response read as it arrives.
type reading struct {
	resp *http.Response
	body io.Reader
	got  bytes.Buffer
}

func open(t *testing.T, url string, header http.Header) *reading {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := streamClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return &reading{resp: resp, body: resp.Body}
}

// until reads until what has arrived holds want; it fails if the response ends first.
func (r *reading) until(t *testing.T, want string) {
	t.Helper()
	if err := r.wait(want); err != nil {
		t.Fatal(err)
	}
}

// wait is until for a goroutine other than the test's.
func (r *reading) wait(want string) error {
	buf := make([]byte, 4096)
	for !strings.Contains(r.got.String(), want) {
		n, err := r.body.Read(buf)
		r.got.Write(buf[:n])
		if err != nil {
			return fmt.Errorf("the response ended (%v) before %q; got:\n%.3000s", err, want, r.got.String())
		}
	}
	return nil
}

// rest reads to the end.
func (r *reading) rest(t *testing.T) string {
	t.Helper()
	if _, err := io.Copy(&r.got, r.body); err != nil {
		t.Fatal(err)
	}
	return r.got.String()
}

func TestStreaming(t *testing.T) {
	g, gateEnv := startGates(t)
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	startRenderer(t, socket, gateEnv)
	edge := startEdge(t, socket)

	t.Run("the shell first, coalesced requests teed, the complete document stored", func(t *testing.T) {
		url := edge.url + "/streamed/11"
		first := open(t, url, nil)
		first.until(t, shellMark)
		if got := first.resp.Header.Get("Cache-Status"); !strings.Contains(got, "fwd=miss") || !strings.Contains(got, streamedMark) {
			t.Errorf("got Cache-Status %q, want a streamed miss", got)
		}
		if got := first.resp.Header.Get("X-Accel-Buffering"); got != "no" {
			t.Errorf("got X-Accel-Buffering %q, want no", got)
		}
		if first.resp.ContentLength != -1 {
			t.Errorf("got Content-Length %d, want none (streamed)", first.resp.ContentLength)
		}
		if !strings.Contains(first.resp.Header.Get("Server-Timing"), "shell;dur=") {
			t.Errorf("got Server-Timing %q, want the shell's time", first.resp.Header.Get("Server-Timing"))
		}
		// The render waits on the gate: a request now joins it, and gets the bytes so far.
		second := open(t, url, nil)
		second.until(t, shellMark)
		if got := second.resp.Header.Get("Cache-Status"); !strings.Contains(got, "collapsed") || !strings.Contains(got, streamedMark) {
			t.Errorf("got Cache-Status %q for the second request, want collapsed and streamed", got)
		}
		for _, r := range []*reading{first, second} {
			if strings.Contains(r.got.String(), reviewsMark) {
				t.Fatalf("the reviews arrived before their gate opened")
			}
		}
		g.open("11")
		a, b := first.rest(t), second.rest(t)
		if a != b {
			t.Errorf("the coalesced request got another document than the first")
		}
		if !strings.Contains(a, reviewsMark) || strings.Contains(a, abortedMark) {
			t.Errorf("the streamed document lacks its reviews or gave them up:\n%.3000s", a)
		}
		if strings.Index(a, shellMark) > strings.Index(a, reviewsMark) {
			t.Errorf("the reviews came before the shell's fallback")
		}
		// The flight stored the complete document; a hit is served whole.
		var hit harness.Response
		poll.Until(t, "the streamed page is cached", func() bool {
			hit = harness.Get(t, url)
			return strings.Contains(hit.Header.Get("Cache-Status"), "hit")
		})
		whole := open(t, url, nil)
		if got := whole.rest(t); got != a {
			t.Errorf("the cache serves another document than the one streamed")
		}
		if whole.resp.ContentLength <= 0 {
			t.Errorf("got Content-Length %d: a hit should be served whole", whole.resp.ContentLength)
		}
	})

	t.Run("compressed per chunk", func(t *testing.T) {
		r := open(t, edge.url+"/streamed/12", http.Header{"Accept-Encoding": {"gzip"}})
		if got := r.resp.Header.Get("Content-Encoding"); got != "gzip" {
			t.Fatalf("got Content-Encoding %q, want gzip", got)
		}
		zr, err := gzip.NewReader(r.resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		r.body = zr
		r.until(t, shellMark)
		g.open("12")
		if !strings.Contains(r.rest(t), reviewsMark) {
			t.Errorf("the compressed stream lacks the reviews")
		}
	})

	t.Run("crawlers get the complete document", func(t *testing.T) {
		url := edge.url + "/streamed/13"
		done := make(chan harness.Response)
		go func() {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			req.Header.Set("User-Agent", "Mozilla/5.0 (compatible; Googlebot/2.1)")
			resp, err := streamClient.Do(req)
			if err != nil {
				t.Error(err)
				close(done)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			done <- harness.Response{Response: resp, Text: string(body)}
		}()
		g.open("13")
		r, ok := <-done
		if !ok {
			return
		}
		if strings.Contains(r.Header.Get("Cache-Status"), streamedMark) || r.Header.Get("Content-Length") == "" {
			t.Errorf("got Cache-Status %q, Content-Length %q: want the whole document", r.Header.Get("Cache-Status"), r.Header.Get("Content-Length"))
		}
		if !strings.Contains(r.Text, reviewsMark) {
			t.Errorf("the crawler's document lacks the reviews")
		}
	})

	t.Run("a boundary past the stream deadline is left to the browser; the cache gets it all", func(t *testing.T) {
		url := edge.url + "/streamed-partial/14"
		r := open(t, url, nil)
		body := r.rest(t) // ends at the route's 1s stream_timeout, the gate still shut
		if !strings.Contains(body, shellMark) || !strings.Contains(body, abortedMark) || strings.Contains(body, reviewsMark) {
			t.Fatalf("want the shell closed with its boundary aborted, got:\n%.3000s", body)
		}
		if !strings.HasSuffix(body, "</html>\n") {
			t.Errorf("the partial document is not closed")
		}
		if got := r.resp.Trailer.Get("X-SSR-Fallback"); got != "partial" {
			t.Errorf("got trailer X-SSR-Fallback %q, want partial", got)
		}
		if got := r.resp.Trailer.Get("Server-Timing"); got != "ssr-fallback;desc=partial-timeout" {
			t.Errorf("got trailer Server-Timing %q, want the partial mark", got)
		}
		g.open("14")
		var hit harness.Response
		poll.Until(t, "the complete render is cached", func() bool {
			hit = harness.Get(t, url)
			return strings.Contains(hit.Header.Get("Cache-Status"), "hit")
		})
		if !strings.Contains(hit.Text, reviewsMark) || strings.Contains(hit.Text, abortedMark) {
			t.Errorf("the stored document is not the complete one:\n%.3000s", hit.Text)
		}
		metrics := harness.Get(t, edge.admin+"/metrics").Text
		if want := `edge_stream_partial_total{reason="timeout",route="GET /streamed-partial/{id}"} 1`; !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	})
}

// TestStreamingThroughNginx puts Debian's nginx, with its default proxy settings (buffering
// on, HTTP/1.0 to the upstream), in front of the edge: X-Accel-Buffering lets the shell
// through before the boundary resolves.
func TestStreamingThroughNginx(t *testing.T) {
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		nginx = "/usr/sbin/nginx"
	}
	if err := harness.Check(nginx); err != nil {
		t.Fatal(err)
	}
	g, gateEnv := startGates(t)
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	startRenderer(t, socket, gateEnv)
	edge := startEdge(t, socket)

	dir := t.TempDir()
	// Workers run as nobody when nginx starts as root: its temp paths must be theirs too.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	port := harness.FreePort(t)
	conf := fmt.Sprintf(`daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log stderr;
events {}
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  server {
    listen 127.0.0.1:%[2]d;
    location / { proxy_pass %[3]s; }
  }
}
`, dir, port, edge.url)
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nginx, "-e", "stderr", "-p", dir, "-c", confPath)
	// Its own process group, so that the test's end stops its worker with the master.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	harness.Start(t, "nginx", cmd)
	front := fmt.Sprintf("http://127.0.0.1:%d", port)
	poll.Until(t, "nginx answers", func() bool {
		resp, err := http.Get(front + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, front+"/streamed/21", nil)
	resp, err := streamClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := &reading{resp: resp, body: resp.Body}
	r.until(t, shellMark)
	if strings.Contains(r.got.String(), reviewsMark) {
		t.Fatal("the reviews arrived before their gate opened")
	}
	g.open("21")
	if body := r.rest(t); !strings.Contains(body, reviewsMark) || !strings.HasSuffix(body, "</html>\n") {
		t.Errorf("the document through nginx is not complete:\n%.3000s", body)
	}
}

// TestStreamingNonce: a Go server that gives each response a CSP nonce (ssr.Options.Nonce)
// streams a page whose inline scripts are React's own ($RC moves a boundary into place) as
// well as the document's. Every script element carries the nonce of the response it is in:
// on a live stream, on a request coalesced onto it with a nonce of its own, at the stream
// deadline (the edge's own script), and on each hit of the stored document.
func TestStreamingNonce(t *testing.T) {
	g, gateEnv := startGates(t)
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	startRenderer(t, socket, gateEnv)
	pages, err := ssr.New(ssr.Options{
		RendererAddress: "unix://" + socket,
		AssetsDir:       assetsDir(),
		Nonce:           func(r *http.Request) string { return r.Header.Get("X-Test-Nonce") },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pages.Close() })
	mux := http.NewServeMux()
	// As harness_test.go's routes of the same names: generous on a loaded runner, except
	// for the deadline that is the behaviour.
	mux.Handle("GET /streamed/{id}", pages.Page("product-reviews", ssr.PageOptions{
		Route: "streamed", Stream: true, Cache: ssr.CachePolicy{TTL: time.Minute, Query: []string{}},
		Timeouts: ssr.Timeouts{Render: 10 * time.Second, Stream: 15 * time.Second, Hard: 30 * time.Second},
	}))
	mux.Handle("GET /streamed-partial/{id}", pages.Page("product-reviews", ssr.PageOptions{
		Route: "streamed-partial", Stream: true,
		Timeouts: ssr.Timeouts{Render: time.Second, Stream: time.Second, Hard: 30 * time.Second},
	}))
	srv := httptest.NewServer(pages.Wrap(mux))
	t.Cleanup(srv.Close)
	nonced := func(nonce string) http.Header { return http.Header{"X-Test-Nonce": {nonce}} }

	t.Run("live, coalesced and stored", func(t *testing.T) {
		url := srv.URL + "/streamed/31"
		first := open(t, url, nonced("first"))
		first.until(t, shellMark)
		second := open(t, url, nonced("second"))
		second.until(t, shellMark)
		g.open("31")
		for _, r := range []struct {
			reading *reading
			nonce   string
		}{{first, "first"}, {second, "second"}} {
			body := r.reading.rest(t)
			if !strings.Contains(body, reviewsMark) {
				t.Fatalf("no reviews in the streamed document:\n%.3000s", body)
			}
			checkNonces(t, body, r.nonce)
		}
		for i, nonce := range []string{"hit1", "hit2"} {
			var hit harness.Response
			poll.Until(t, "the streamed page is cached", func() bool {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("X-Test-Nonce", nonce)
				resp, err := streamClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				hit = harness.Response{Response: resp, Text: string(body)}
				return strings.Contains(resp.Header.Get("Cache-Status"), "hit")
			})
			if !strings.Contains(hit.Text, reviewsMark) {
				t.Fatalf("hit %d: not the complete document:\n%.3000s", i, hit.Text)
			}
			checkNonces(t, hit.Text, nonce)
		}
	})

	t.Run("past the stream deadline", func(t *testing.T) {
		body := open(t, srv.URL+"/streamed-partial/32", nonced("late")).rest(t)
		g.open("32")
		if !strings.Contains(body, abortedMark) {
			t.Fatalf("the document was not closed at the deadline:\n%.3000s", body)
		}
		checkNonces(t, body, "late")
	})
}

// checkNonces fails unless every script element of body carries nonce, and nothing else
// in it looks like a nonce attribute (a placeholder left behind, another response's).
func checkNonces(t *testing.T, body, nonce string) {
	t.Helper()
	tags := regexp.MustCompile(`<script\b[^>]*>`).FindAllString(body, -1)
	if len(tags) < 3 {
		t.Errorf("got %d script elements, want the client's, the data's and React's own at least:\n%.3000s", len(tags), body)
	}
	for _, tag := range tags {
		if !strings.Contains(tag, ` nonce="`+nonce+`"`) {
			t.Errorf("script %s lacks the response's nonce %q", tag, nonce)
		}
	}
	if got := strings.Count(body, ` nonce="`); got != len(tags) {
		t.Errorf("got %d nonce attributes for %d script elements:\n%.3000s", got, len(tags), body)
	}
}
