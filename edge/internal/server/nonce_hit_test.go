package server

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
)

// catalogue is about size bytes of product cards: HTML that compresses as a real listing
// does, neither a single repeated string nor noise.
func catalogue(size int) string {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"chair", "table", "lamp", "oak", "walnut", "modern", "classic", "blue", "linen", "velvet"}
	word := func() string { return words[r.IntN(len(words))] }
	var b strings.Builder
	b.WriteString("<main><ul>")
	for b.Len() < size {
		fmt.Fprintf(&b, `<li class="card"><a href="/products/%d"><img src="/img/%x.webp" alt="%s %s"><h3>%s %s</h3><p class="price">€%d.%02d</p></a></li>`+"\n",
			r.IntN(100000), r.Uint64(), word(), word(), word(), word(), r.IntN(900), r.IntN(100))
	}
	b.WriteString("</ul></main>")
	return b.String()
}

// noncedStack serves / from a stored copy of a page of about size bytes, each response with
// the script nonce its request names in X-Test-Nonce.
func noncedStack(t testing.TB, size int) *stack {
	t.Helper()
	s := start(t, func(e *testSite) {
		cached(e)
		e.MaxPageBytes, e.CacheMaxBytes, e.CacheMaxEntryBytes = 16<<20, 64<<20, 16<<20
	}, func(o *Options) { o.Nonce = func(r *http.Request) string { return r.Header.Get("X-Test-Nonce") } })
	s.renderer.render = renders(catalogue(size))
	resp, err := http.Get(s.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if e, _ := s.cache.Get(homeKey); e == nil || e.NonceAt == nil {
		t.Fatalf("the %d-byte page was not stored with nonce slots (Cache-Status %q)", size, resp.Header.Get("Cache-Status"))
	}
	return s
}

// TestNonceHitBody: a stored page served with a nonce is the stored document with this
// response's nonce on every script element, in each coding the client may ask for.
func TestNonceHitBody(t *testing.T) {
	large, small := noncedStack(t, 100<<10), noncedStack(t, 0)
	for _, tc := range []struct {
		name   string
		s      *stack
		accept string
		want   string // Content-Encoding
	}{
		{"identity", large, "", ""},
		{"gzip", large, "gzip", "gzip"},
		{"br", large, "br, gzip", "br"},
		{"zstd", large, "gzip, deflate, br, zstd", "zstd"},
		{"below the compression threshold", small, "zstd", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nonce := "n0nce+/=" + tc.want
			resp, body := getWith(t, tc.s.url+"/", map[string]string{"Accept-Encoding": tc.accept, "X-Test-Nonce": nonce})
			if got := resp.Header.Get("Cache-Status"); !strings.HasPrefix(got, "sidecar-ssr; hit") {
				t.Fatalf("got Cache-Status %q, want a hit", got)
			}
			if got := resp.Header.Get("Content-Encoding"); got != tc.want {
				t.Fatalf("got Content-Encoding %q, want %q", got, tc.want)
			}
			e, _ := tc.s.cache.Get(homeKey)
			want := string(document.WithNonce(nil, e.Bodies[""], e.NonceAt, nonce))
			got := decode(t, tc.want, body)
			if got != want {
				t.Fatalf("the body decodes to %d bytes, not the %d-byte document with this response's nonce", len(got), len(want))
			}
			scripts, nonced := strings.Count(got, "<script"), strings.Count(got, `<script nonce="`+nonce+`"`)
			if scripts == 0 || nonced != scripts {
				t.Errorf("%d of %d script elements carry this response's nonce", nonced, scripts)
			}
			wantLength := int64(-1) // compressed as it is sent: chunked
			if tc.want == "" {
				wantLength = int64(len(want))
			}
			if resp.ContentLength != wantLength {
				t.Errorf("got Content-Length %d, want %d", resp.ContentLength, wantLength)
			}
			if tag := resp.Header.Get("ETag"); tag != "" {
				t.Errorf("got ETag %s: a 304 would keep an earlier response's nonce", tag)
			}
		})
	}
}

// TestStreamEncodersAreBounded: while maxStreamEncoders responses of clients that read hold
// an encoder, a hit with a nonce goes out uncompressed, whole; once one is given back,
// compressed again.
func TestStreamEncodersAreBounded(t *testing.T) {
	s := noncedStack(t, 100<<10)
	encodersFree(t)
	var releases []func()
	for i := range maxStreamEncoders {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = fmt.Sprintf("192.0.2.%d:1234", i/maxStreamEncodersPerClient+1)
		release, refused := encoders.take(r)
		if refused != "" {
			t.Fatalf("encoder %d refused: %s", i, refused)
		}
		releases = append(releases, release)
	}
	ask := map[string]string{"Accept-Encoding": "gzip", "X-Test-Nonce": "n0nce"}
	resp, body := getWith(t, s.url+"/", ask)
	e, _ := s.cache.Get(homeKey)
	if want := string(document.WithNonce(nil, e.Bodies[""], e.NonceAt, "n0nce")); resp.Header.Get("Content-Encoding") != "" || body != want {
		t.Errorf("with every encoder taken: got Content-Encoding %q and %d bytes, want the %d-byte document uncompressed",
			resp.Header.Get("Content-Encoding"), len(body), len(want))
	}
	for _, release := range releases {
		release()
	}
	if resp, _ := getWith(t, s.url+"/", ask); resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("with encoders free: got Content-Encoding %q, want gzip", resp.Header.Get("Content-Encoding"))
	}
}

// TestNonceHitHoldsNoCopyOfThePage: a hit with a nonce to a client that reads nothing holds
// as much memory for a 7 MB page as for a 100 KB one, until its write times out (when each
// held a copy, 200 such clients of a 7 MB page took the edge from 142 to 1,493 MB).
func TestNonceHitHoldsNoCopyOfThePage(t *testing.T) {
	const parked = 8
	sizes := []int{100 << 10, 7 << 20}
	codings := []string{"identity", "gzip", "br", "zstd"}
	held := map[string][]uint64{}
	for _, size := range sizes {
		s := noncedStack(t, size)
		for _, coding := range codings {
			held[coding] = append(held[coding], heldPerHit(t, s.handler, coding, parked))
		}
	}
	// At most an encoder's state (0.7 to 1 MB), with room to spare.
	const maxHeld = 1536 << 10
	for _, coding := range codings {
		small, large := held[coding][0], held[coding][1]
		t.Logf("%s: %d KB held per parked hit on the 100 KB page, %d KB on the 7 MB page", coding, small>>10, large>>10)
		if large > small+256<<10 {
			t.Errorf("%s: a parked hit holds %d KB on the 7 MB page, %d KB on the 100 KB one: it grows with the page", coding, large>>10, small>>10)
		}
		if large > maxHeld || small > maxHeld {
			t.Errorf("%s: a parked hit holds %d KB on the 100 KB page, %d KB on the 7 MB page, want at most %d KB", coding, small>>10, large>>10, maxHeld>>10)
		}
	}
}

// heldPerHit is the heap that each of parked hits of h holds while its client reads nothing.
func heldPerHit(t *testing.T, h http.Handler, coding string, parked int) uint64 {
	t.Helper()
	// Twice: what the pools held goes too, so a hit that needs a buffer is seen allocating it.
	runtime.GC()
	runtime.GC()
	var before, during runtime.MemStats
	runtime.ReadMemStats(&before)
	arrived, release := make(chan struct{}), make(chan struct{})
	var done sync.WaitGroup
	for i := range parked {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Accept-Encoding", coding)
		req.Header.Set("X-Test-Nonce", "parked"+strconv.Itoa(i))
		req.RemoteAddr = fmt.Sprintf("192.0.2.%d:1234", i+1) // each its own client: none past its share
		client := &stalledClient{header: http.Header{}, buffer: 4 << 10, arrived: arrived, release: release}
		done.Go(func() { h.ServeHTTP(client, req) })
	}
	for range parked {
		select {
		case <-arrived:
		case <-time.After(10 * time.Second): // generous: it bounds only a failing wait
			close(release)
			t.Fatalf("%s: a hit did not block on its client", coding)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&during)
	close(release)
	done.Wait()
	return (max(during.HeapAlloc, before.HeapAlloc) - before.HeapAlloc) / uint64(parked)
}

// stalledClient is a connection whose client reads nothing: once its buffer is full, a
// write blocks until release is closed, as a write to a full socket does until the write
// timeout.
type stalledClient struct {
	header  http.Header
	buffer  int // bytes taken before a write blocks
	stalled bool
	arrived chan<- struct{}
	release <-chan struct{}
}

func (c *stalledClient) Header() http.Header { return c.header }
func (c *stalledClient) WriteHeader(int)     {}
func (c *stalledClient) Write(b []byte) (int, error) {
	if !c.stalled && len(b) > c.buffer {
		c.stalled = true
		c.arrived <- struct{}{}
		<-c.release
	}
	c.buffer -= len(b)
	return len(b), nil
}

// discardingClient reads and drops the response.
type discardingClient struct {
	header http.Header
	code   int
}

func (c *discardingClient) Header() http.Header         { return c.header }
func (c *discardingClient) WriteHeader(code int)        { c.code = code }
func (c *discardingClient) Write(b []byte) (int, error) { return len(b), nil }

// BenchmarkNonceHit is a cache hit with a CSP nonce on a 100 KB and a 7 MB page, in each
// coding: `go test -run '^$' -bench NonceHit -benchmem ./internal/server`.
func BenchmarkNonceHit(b *testing.B) {
	for _, size := range []int{100 << 10, 7 << 20} {
		s := noncedStack(b, size)
		for _, coding := range []string{"identity", "zstd", "br", "gzip"} {
			b.Run(fmt.Sprintf("%dKB/%s", size>>10, coding), func(b *testing.B) {
				req := httptest.NewRequest("GET", "/", nil)
				req.Header.Set("Accept-Encoding", coding)
				req.Header.Set("X-Test-Nonce", "bench")
				b.ReportAllocs()
				for b.Loop() {
					w := &discardingClient{header: http.Header{}}
					s.handler.ServeHTTP(w, req)
					if w.code != http.StatusOK {
						b.Fatalf("got %d, want 200", w.code)
					}
				}
			})
		}
	}
}
