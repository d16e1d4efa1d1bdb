package server

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/logtest"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
)

// The writers a router or middleware puts between Wrap's and the page's.
type (
	// ginLike flushes only a writer it wraps that is an http.Flusher, as Gin's
	// responseWriter does, and has no Unwrap.
	ginLike struct{ w http.ResponseWriter }
	// swallowing has a Flush that does nothing.
	swallowing struct{ w http.ResponseWriter }
	// writeOnly cannot flush at all: no Flush, no Unwrap.
	writeOnly struct{ w http.ResponseWriter }
)

func (g ginLike) Header() http.Header         { return g.w.Header() }
func (g ginLike) Write(b []byte) (int, error) { return g.w.Write(b) }
func (g ginLike) WriteHeader(code int)        { g.w.WriteHeader(code) }
func (g ginLike) Flush() {
	if f, ok := g.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s swallowing) Header() http.Header         { return s.w.Header() }
func (s swallowing) Write(b []byte) (int, error) { return s.w.Write(b) }
func (s swallowing) WriteHeader(code int)        { s.w.WriteHeader(code) }
func (swallowing) Flush()                        {}

func (o writeOnly) Header() http.Header         { return o.w.Header() }
func (o writeOnly) Write(b []byte) (int, error) { return o.w.Write(b) }
func (o writeOnly) WriteHeader(code int)        { o.w.WriteHeader(code) }

// behind is a router handing h the writer wrap makes of its own.
func behind(wrap func(http.ResponseWriter) http.ResponseWriter, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(wrap(w), r) })
}

// TestStreamedPageFlushesThroughWrap: a streamed page behind Wrap and a router's writer sends
// its shell while its render is still held, when that writer flushes what it wraps the way
// Gin's does (an http.Flusher only); a writer that swallows the flush, or cannot flush, costs
// the page its streaming but not its end: the whole page arrives, the loss is counted by its
// reason and logged once.
func TestStreamedPageFlushesThroughWrap(t *testing.T) {
	tests := []struct {
		name   string
		router func(http.ResponseWriter) http.ResponseWriter
		lost   string // edge_stream_unflushed_total's reason; "" when the shell streams
	}{
		{"ServeMux", nil, ""},
		{"a router flushing an http.Flusher only (Gin)", func(w http.ResponseWriter) http.ResponseWriter { return ginLike{w} }, ""},
		{"a router swallowing the flush", func(w http.ResponseWriter) http.ResponseWriter { return swallowing{w} }, "swallowed"},
		{"a router that cannot flush", func(w http.ResponseWriter) http.ResponseWriter { return writeOnly{w} }, "not-supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			held, release := make(chan struct{}), make(chan struct{})
			r := &holdingRenderer{url: "/held", where: afterShell, held: sync.OnceFunc(func() { close(held) }), release: release}
			url, metrics, logs := flushSite(t, r, tt.router)

			shell := make(chan error, 1)
			var body strings.Builder
			done := make(chan error, 1)
			go func() {
				resp, err := http.Get(url + "/held")
				if err != nil {
					shell <- err
					return
				}
				defer resp.Body.Close()
				br := bufio.NewReader(resp.Body)
				_, err = br.Peek(1)
				shell <- err
				_, err = io.Copy(&body, br)
				done <- err
			}()
			<-held
			if tt.lost == "" {
				poll.Until(t, "the shell to reach the client while the render is held", func() bool {
					select {
					case err := <-shell:
						if err != nil {
							t.Fatal(err)
						}
						return true
					default:
						return false
					}
				})
			} else {
				poll.Until(t, "the lost flush to be counted while the render is held", func() bool {
					return testutil.ToFloat64(metrics.streamUnflushed.WithLabelValues("GET /held", tt.lost)) == 1
				})
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(body.String(), "<p>streamed</p>") || !strings.Contains(body.String(), "</html>") {
				t.Errorf("the page did not arrive whole:\n%s", body.String())
			}
			for _, reason := range []string{"swallowed", "not-supported"} {
				want := 0.0
				if reason == tt.lost {
					want = 1
				}
				if got := testutil.ToFloat64(metrics.streamUnflushed.WithLabelValues("GET /held", reason)); got != want {
					t.Errorf("edge_stream_unflushed_total{reason=%q} = %v, want %v", reason, got, want)
				}
			}
			if said := strings.Contains(logs.String(), "flush did not reach the connection"); said != (tt.lost != "") {
				t.Errorf("logged the lost flush: %v, want %v:\n%s", said, tt.lost != "", logs)
			}
		})
	}
}

// flushSite serves /held, a streamed page over r, through site.Wrap and then router's
// writer, if any: its URL, its metrics and its log.
func flushSite(t *testing.T, r Renderer, router func(http.ResponseWriter) http.ResponseWriter) (string, *Metrics, *logtest.Buffer) {
	t.Helper()
	e := defaultSite().Options
	e.AssetsDir = t.TempDir()
	if err := os.Mkdir(filepath.Join(e.AssetsDir, "assets"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.Timeouts.Render, e.Timeouts.Stream, e.Timeouts.Hard = 10*time.Second, 15*time.Second, 20*time.Second
	e.Renderer, e.Manifest = r, &document.Manifest{BuildID: "b1"}
	e.Cache = htmlcache.New(htmlcache.Options{MaxBytes: 1 << 20, MaxEntryBytes: 1 << 20})
	logs := &logtest.Buffer{}
	e.Metrics, e.Log = NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewJSONHandler(logs, nil))
	site, err := NewSite(e)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(site.Close)
	mux := http.NewServeMux()
	mux.Handle("GET /held", site.Page(Route{Pattern: "GET /held", Page: "held", Stream: true}, PageOptions{}))
	var h http.Handler = mux
	if router != nil {
		h = behind(router, mux)
	}
	ts := httptest.NewServer(site.Wrap(h))
	t.Cleanup(ts.Close)
	return ts.URL, e.Metrics, logs
}
