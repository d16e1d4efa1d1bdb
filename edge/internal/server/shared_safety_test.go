package server

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache/redistest"
)

// The shared store is written by whatever can reach it, not only by edges (issue #24,
// finding 3). These tests put values no edge writes straight into a real redis-server and
// ask the edge for the page or file.

// newSharedStore is a store on a fresh redis-server, and a writer straight into that server.
func newSharedStore(t *testing.T) (*sharedcache.Store, func(key string, value []byte)) {
	t.Helper()
	address := redistest.Start(t)
	store, err := sharedcache.New(sharedcache.Options{Address: address, Timeout: time.Second, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ro, err := redis.ParseURL(address)
	if err != nil {
		t.Fatal(err)
	}
	writer := redis.NewClient(ro)
	t.Cleanup(func() { writer.Close() })
	return store, func(key string, value []byte) {
		t.Helper()
		if err := writer.Set(context.Background(), key, value, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// sharedCalls is edge_shared_cache_seconds' count for op and result.
func sharedCalls(g prometheus.Gatherer, op, result string) int {
	families, _ := g.Gather()
	n := 0
	for _, f := range families {
		if f.GetName() != "edge_shared_cache_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["op"] == op && (result == "" || labels["result"] == result) {
				n += int(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return n
}

// A document with status 0 and a Set-Cookie in the store: the edge renders the page itself,
// and neither a panic nor the cookie reaches the client.
func TestSharedDocumentWithStatusZeroIsAMiss(t *testing.T) {
	store, write := newSharedStore(t)
	s := start(t, cached, func(o *Options) { o.Shared = store })
	renders := counting(s, body("rendered"))
	write("ssr:doc:"+homeKey, sharedcache.Encode("ssr:doc:"+homeKey, &htmlcache.Entry{
		Key: homeKey, Path: "/", Status: 0, Header: http.Header{"Set-Cookie": {"session=attacker"}},
		Bodies: map[string][]byte{"": []byte("<p>forged</p>")}, Stored: s.clock.now(), TTL: time.Hour,
	}, nil))
	resp, text := get(t, s.url+"/")
	if resp.StatusCode != 200 || !strings.Contains(text, "rendered") || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("got %d, Set-Cookie %q, body %.40q; want 200, the page rendered, no cookie", resp.StatusCode, resp.Header.Get("Set-Cookie"), text)
	}
	if renders.Load() != 1 {
		t.Errorf("%d renders, want 1", renders.Load())
	}
	if n := sharedCalls(s.registry, "get", "invalid"); n != 1 {
		t.Errorf("edge_shared_cache_seconds{op=get,result=invalid} counts %d, want 1", n)
	}
}

// A document naming a header the edge sets itself (it could only come from another writer:
// pageHeaders drops them) is a miss too.
func TestSharedDocumentWithTheEdgesHeaderIsAMiss(t *testing.T) {
	for _, header := range []string{"Content-Encoding", "X-Request-Id", "Transfer-Encoding", "Cache-Status"} {
		t.Run(header, func(t *testing.T) {
			store, write := newSharedStore(t)
			s := start(t, cached, func(o *Options) { o.Shared = store })
			counting(s, body("rendered"))
			write("ssr:doc:"+homeKey, sharedcache.Encode("ssr:doc:"+homeKey, &htmlcache.Entry{
				Key: homeKey, Path: "/", Status: 200, Header: http.Header{header: {"forged"}}, ETag: `"f"`,
				Bodies: map[string][]byte{"": []byte("<p>forged</p>")}, Stored: s.clock.now(), TTL: time.Hour,
			}, nil))
			resp, text := get(t, s.url+"/")
			if resp.StatusCode != 200 || !strings.Contains(text, "rendered") || strings.Contains(text, "forged") || slices.Contains(resp.Header.Values(header), "forged") {
				t.Errorf("got %d, %s %q, body %.40q; want the page rendered", resp.StatusCode, header, resp.Header.Values(header), text)
			}
			if n := sharedCalls(s.registry, "get", "invalid"); n != 1 {
				t.Errorf("edge_shared_cache_seconds{op=get,result=invalid} counts %d, want 1", n)
			}
		})
	}
}

// What one edge stores, another serves: every coding the edge stores documents in is one the
// store takes.
func TestSharedDocumentsBetweenReplicas(t *testing.T) {
	for _, coding := range storedCodings {
		if !slices.Contains(sharedcache.Codings(), coding) {
			t.Errorf("the edge stores documents in %q, which the shared store refuses", coding)
		}
	}
	store, _ := newSharedStore(t)
	a := start(t, cached, func(o *Options) { o.Shared = store })
	b := start(t, cached, func(o *Options) { o.Shared = store })
	for _, s := range []*stack{a, b} {
		s.clock.mu.Lock()
		s.clock.t = time.Now() // the store keeps a document for its lifetime from now
		s.clock.mu.Unlock()
	}
	counting(a, body("from a"))
	renders := counting(b, body("from b"))
	if resp, text := get(t, a.url+"/"); resp.StatusCode != 200 || !strings.Contains(text, "from a") {
		t.Fatalf("edge a: got %d %.40q", resp.StatusCode, text)
	}
	poll.Until(t, "edge a's document in the store", func() bool { return sharedCalls(a.registry, "set", "ok") == 1 })
	for _, enc := range []string{"identity", "br", "gzip"} {
		resp, text := getWith(t, b.url+"/", map[string]string{"Accept-Encoding": enc})
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != strings.TrimPrefix(enc, "identity") || enc == "identity" && !strings.Contains(text, "from a") {
			t.Errorf("edge b, Accept-Encoding %q: got %d, Content-Encoding %q, %.40q; want edge a's page", enc, resp.StatusCode, resp.Header.Get("Content-Encoding"), text)
		}
	}
	if renders.Load() != 0 {
		t.Errorf("edge b rendered %d times, want 0", renders.Load())
	}
}

// Files from the store: only hashed names of the client build's types are looked up, whatever
// the store holds; every answer says nosniff, files from disk and 404s included.
func TestAssetsFromTheStore(t *testing.T) {
	store, write := newSharedStore(t)
	registry := prometheus.NewRegistry()
	metrics := NewMetrics(registry)
	shared := &sharedTier{store: store, metrics: metrics, log: slog.New(slog.DiscardHandler)}
	dir := t.TempDir()
	writeAssets(t, dir, "client-ONDISK01.js", "page.html")
	a, err := newAssets(dir, shared)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"evil", "evil.html", "client.js", "client-1.js", "logo-ABCDEFGH.svg", "index-ABCDEFGH.html",
		"client-ABCDEFGH", "sub/client-ABCDEFGH.js", "client-ABCDEFGH.html.map", "client-ABCDEFGH.js", "client-ABCDEFGH.js.map", "font-ABCDEFGH.woff2"} {
		write("ssr:asset:"+name, []byte("<html><script>alert(document.cookie)</script>"))
	}
	tests := []struct {
		name  string
		code  int
		ctype string
	}{
		{"evil", 404, ""},
		{"evil.html", 404, ""},
		{"client.js", 404, ""},
		{"client-1.js", 404, ""},
		{"logo-ABCDEFGH.svg", 404, ""},
		{"index-ABCDEFGH.html", 404, ""},
		{"client-ABCDEFGH", 404, ""},
		{"sub/client-ABCDEFGH.js", 404, ""},
		{"client-ABCDEFGH.html.map", 404, ""},
		{"client-NOTSTORED.js", 404, ""},
		{"client-ABCDEFGH.js", 200, "text/javascript; charset=utf-8"},
		{"client-ABCDEFGH.js.map", 200, "application/json"},
		{"font-ABCDEFGH.woff2", 200, "font/woff2"},
		{"client-ONDISK01.js", 200, "text/javascript; charset=utf-8"},
		{"page.html", 200, "text/html; charset=utf-8"}, // the build's own files are served as they are
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := getAsset(a, tt.name)
			if rec.Code != tt.code || tt.ctype != "" && rec.Header().Get("Content-Type") != tt.ctype {
				t.Errorf("got %d %q, want %d %q", rec.Code, rec.Header().Get("Content-Type"), tt.code, tt.ctype)
			}
			if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q, want nosniff", got)
			}
		})
	}
	// Names that cannot be served from the store are not even asked for.
	if n := sharedCalls(registry, "get-asset", ""); n != 4 {
		t.Errorf("the store was asked for %d files, want 4 (the hashed names of known types not on disk)", n)
	}
}
