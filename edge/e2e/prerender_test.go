package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache/redistest"
)

// getAs GETs url with the cookie named cookie set to who, and reads the whole body.
func getAs(t *testing.T, url, cookie, who string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.AddCookie(&http.Cookie{Name: cookie, Value: who})
	r := harness.Do(t, req)
	return r.Response, r.Text
}

// TestPrerenderedShellHoldsNoVisitor: a partially prerendered route (per_request) in front of
// the real renderer, with the shared cache a real redis-server. Two visitors asking at the
// same time get the same prelude, bytes compared, and each their own value after it, never
// the other's; the stored entries, read from the store as the edge wrote them, hold the
// hole's fallback and neither visitor's value.
func TestPrerenderedShellHoldsNoVisitor(t *testing.T) {
	store := redistest.Start(t)
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	startRenderer(t, socket)
	edge := startEdge(t, socket, "SSR_EDGE_SHARED_CACHE_ADDRESS="+store)
	visitors := []string{"ann-5c1e", "bob-0d9f"}
	var shell string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for round := range 5 {
		for i, who := range visitors {
			wg.Go(func() {
				resp, body := getAs(t, edge.url+"/prerendered/1", "visitor", who)
				status := resp.Header.Get("Cache-Status")
				if resp.StatusCode != 200 || !strings.Contains(status, "detail=resumed") || resp.Header.Get("X-SSR-Fallback") != "" {
					t.Errorf("round %d, %s: %d, Cache-Status %q: want a resumed prelude", round, who, resp.StatusCode, status)
					return
				}
				if !strings.Contains(body, `data-testid="visitor">hello <!-- -->`+who+`</p>`) || !strings.HasSuffix(body, "</html>\n") {
					t.Errorf("round %d, %s: want the visitor's own hole in a whole document, got:\n%.3000s", round, who, body)
				}
				if other := visitors[1-i]; strings.Contains(body, other) {
					t.Errorf("round %d: %s's response holds %s's value", round, who, other)
				}
				at := strings.Index(body, `<div hidden id="S:`)
				if at < 0 {
					t.Errorf("round %d, %s: no resumed hole:\n%.3000s", round, who, body)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if shell == "" {
					shell = body[:at]
				} else if body[:at] != shell {
					t.Errorf("round %d, %s: a prelude other than the first:\n%s\nwant:\n%s", round, who, body[:at], shell)
				}
			})
		}
		wg.Wait()
	}
	if !strings.Contains(shell, `data-testid="visitor-pending"`) || strings.Contains(shell, "hello <!-- -->") {
		t.Errorf("the prelude lacks the hole's fallback, or holds a visitor's value:\n%s", shell)
	}
	stored := 0
	for key, value := range redistest.Values(t, store) {
		for _, who := range visitors {
			if bytes.Contains(value, []byte(who)) {
				t.Errorf("the store's %s holds %s's value", key, who)
			}
		}
		if bytes.Contains(value, []byte(`data-testid="visitor-pending"`)) {
			stored++
		}
	}
	if stored != 1 {
		t.Errorf("the store holds %d preludes of the page, want 1", stored)
	}
}

// TestPrerenderFailures: a page that reads a value per request outside every Suspense
// boundary is refused (nothing stored; the log names the page and the value); a prerender
// whose boundary threw is served but not stored; a page with no hole is a plain cached page.
func TestPrerenderFailures(t *testing.T) {
	_, edge := startStack(t)

	for range 2 {
		resp, _ := getAs(t, edge.url+"/prerendered-outside", "gate", "x")
		if resp.Header.Get("X-SSR-Fallback") == "" || strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
			t.Errorf("a value read outside a hole: X-SSR-Fallback %q, Cache-Status %q; want the page refused, never stored",
				resp.Header.Get("X-SSR-Fallback"), resp.Header.Get("Cache-Status"))
		}
	}
	edge.WaitLine("the refusal, naming the page and the value", func(line string) bool {
		return strings.Contains(line, `page \"awaits\"`) && strings.Contains(line, `\"gate\"`) && strings.Contains(line, "outside")
	})

	for i := range 2 {
		resp, body := getAs(t, edge.url+"/prerendered-throws", "visitor", "ann")
		status := resp.Header.Get("Cache-Status")
		if resp.StatusCode != 200 || strings.Contains(status, "hit") || !strings.Contains(body, "<h1>static</h1>") {
			t.Errorf("request %d to a page whose boundary throws: %d, Cache-Status %q; want it rendered, never stored", i, resp.StatusCode, status)
		}
	}

	var statuses []string
	for range 2 {
		resp, body := getAs(t, edge.url+"/prerendered-whole/4", "visitor", "ann")
		statuses = append(statuses, resp.Header.Get("Cache-Status"))
		if resp.StatusCode != 200 || strings.Contains(body, "ann") || strings.Contains(statuses[len(statuses)-1], "resumed") {
			t.Errorf("a page with no hole: %d, %s; want the page whole, its prelude", resp.StatusCode, fmt.Sprint(statuses))
		}
	}
	if !strings.HasPrefix(statuses[1], "sidecar-ssr; hit") {
		t.Errorf("a page with no hole, asked again: Cache-Status %q, want a plain hit", statuses[1])
	}
}
