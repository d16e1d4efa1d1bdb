package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache/redistest"
)

// TestSharedCacheAcrossTwoEdges: two edge processes, one real renderer, one real
// redis-server as the shared cache (edge.shared_cache_address). A herd on a cold key spread
// over both edges makes one render; a purge on one edge reaches the other; with the store
// killed, both go on with no 5xx.
func TestSharedCacheAcrossTwoEdges(t *testing.T) {
	store, stopStore := redistest.StartStoppable(t)
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	startRenderer(t, socket)
	env := "SSR_EDGE_SHARED_CACHE_ADDRESS=" + store
	edges := []*edgeProcess{startEdge(t, socket, env), startEdge(t, socket, env)}
	renders := func() float64 {
		var n float64
		for _, e := range edges {
			n += sum(scrape(t, e.admin+"/metrics"), "edge_render_duration_seconds_count", `route="GET /cached/slow"`)
		}
		return n
	}

	// The herd: 20 concurrent first requests, half on each edge, for a page that renders in
	// 300 ms. Each edge coalesces its own; across edges, the store's lock leaves one render.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := harness.NoRedirects.Get(edges[i%2].url + "/cached/slow?ms=300")
			if err != nil || r.StatusCode >= 500 {
				t.Errorf("herd request %d: %v, %v", i, r, err)
			}
			if r != nil {
				r.Body.Close()
			}
		}()
	}
	wg.Wait()
	poll.Until(t, "both edges serving the page from their caches", func() bool {
		a, b := harness.Get(t, edges[0].url+"/cached/slow?ms=300"), harness.Get(t, edges[1].url+"/cached/slow?ms=300")
		return strings.HasPrefix(cacheStatus(a), "sidecar-ssr; hit") && strings.HasPrefix(cacheStatus(b), "sidecar-ssr; hit")
	})
	if n := renders(); n != 1 {
		t.Errorf("the herd over two edges made %v renders, want 1", n)
	}

	// A purge on edge 0 empties edge 1's cache too (the store's pub/sub), and the store's.
	if code, body := purge(t, edges[0], "path=/cached/slow%3Fms=300"); code != http.StatusOK {
		t.Fatalf("purge: %d %s", code, body)
	}
	poll.Until(t, "edge 1 missing after edge 0's purge", func() bool {
		return strings.Contains(cacheStatus(harness.Get(t, edges[1].url+"/cached/slow?ms=300")), "fwd=miss")
	})
	// The render goes on past the miss's render timeout; it is counted when it ends.
	poll.Until(t, "edge 1's render after the purge", func() bool { return renders() >= 2 })
	if n := renders(); n != 2 {
		t.Errorf("after the purge: %v renders in all, want 2 (edge 1 rendered again, once)", n)
	}

	// A page tagged item:5 (the fixture's load() tags it): cached on both edges, then one
	// purge by tag on edge 1 makes both miss.
	for _, e := range edges {
		poll.Until(t, "/items/5 cached", func() bool {
			return strings.HasPrefix(cacheStatus(harness.Get(t, e.url+"/items/5")), "sidecar-ssr; hit")
		})
	}
	if code, body := purge(t, edges[1], "tag=item:5"); code != http.StatusOK {
		t.Fatalf("purge by tag: %d %s", code, body)
	}
	for _, e := range edges {
		poll.Until(t, "a miss on /items/5 after the purge by tag", func() bool {
			return strings.Contains(cacheStatus(harness.Get(t, e.url+"/items/5")), "fwd=miss")
		})
	}

	// The store dies: both edges go on with their own caches and the renderer, no 5xx.
	stopStore()
	for i := range 40 {
		for _, path := range []string{"/cached/slow?ms=300", fmt.Sprintf("/cached/products/%d", i), "/"} {
			if r := harness.Get(t, edges[i%2].url+path); r.StatusCode >= 500 {
				t.Fatalf("%s with the store down: got %d", path, r.StatusCode)
			}
		}
	}
	if n := sum(scrape(t, edges[0].admin+"/metrics"), "edge_shared_cache_seconds_count", `result="unavailable"`) +
		sum(scrape(t, edges[0].admin+"/metrics"), "edge_shared_cache_seconds_count", `result="error"`); n == 0 {
		t.Error("with the store down, edge_shared_cache_seconds counts no error and no open circuit")
	}
}

// TestRolloutServesPreviousBuildsAssets: during a rollout, a page of build N asks an edge
// of build N+1 for build N's files. With a shared cache, every edge puts its build's files
// in the store at start, and an edge serves the files it lacks from there; its pages and
// cached documents stay its own build's.
func TestRolloutServesPreviousBuildsAssets(t *testing.T) {
	store := redistest.Start(t)
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	startRenderer(t, socket)
	env := "SSR_EDGE_SHARED_CACHE_ADDRESS=" + store

	// Build N+1: another build id, another hashed script, none of build N's files.
	next := t.TempDir()
	os.Mkdir(filepath.Join(next, "assets"), 0o755)
	os.WriteFile(filepath.Join(next, "assets", "client-NEXTBUILD.js"), []byte("console.log('N+1')"), 0o644)
	os.WriteFile(filepath.Join(next, "manifest.json"), []byte(`{"buildId": "next", "scripts": ["/assets/client-NEXTBUILD.js"], "styles": []}`), 0o644)
	old, newer := startEdge(t, socket, env), startEdge(t, socket, env, "SSR_EDGE_ASSETS_DIR="+next)

	page := harness.Get(t, old.url+"/")
	files := regexp.MustCompile(`/assets/[A-Za-z0-9._-]+`).FindAllString(page.Text, -1)
	if len(files) == 0 {
		t.Fatalf("build N's page links no /assets/ file:\n%s", page.Text)
	}
	for _, f := range files {
		want := harness.Get(t, old.url+f)
		if want.StatusCode != http.StatusOK {
			t.Fatalf("%s from its own build: %d", f, want.StatusCode)
		}
		// Build N's edge publishes its files as it starts: wait for that.
		poll.Until(t, f+" from the edge of build N+1", func() bool {
			got := harness.Get(t, newer.url+f)
			return got.StatusCode == http.StatusOK && got.Text == want.Text &&
				got.Header.Get("Content-Type") == want.Header.Get("Content-Type") &&
				strings.Contains(got.Header.Get("Cache-Control"), "immutable")
		})
	}
	if r := harness.Get(t, newer.url+"/assets/client-NOSUCHFILE.js"); r.StatusCode != http.StatusNotFound {
		t.Errorf("a file no build has: got %d, want 404", r.StatusCode)
	}

	// A document build N stored is never served by build N+1: the key carries the build.
	harness.Get(t, old.url+"/cached/products/3")
	poll.Until(t, "build N's copy stored", func() bool {
		return strings.HasPrefix(cacheStatus(harness.Get(t, old.url+"/cached/products/3")), "sidecar-ssr; hit")
	})
	r := harness.Get(t, newer.url+"/cached/products/3")
	if strings.Contains(cacheStatus(r), "detail=shared") || strings.Contains(r.Text, "/assets/client-") && !strings.Contains(r.Text, "client-NEXTBUILD.js") {
		t.Errorf("build N+1 served build N's document: Cache-Status %q", cacheStatus(r))
	}
}
