package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/admin"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// homeKey is the cache key of GET / in the test stack.
const homeKey = "b1 GET /{$} /"

// cached turns caching on for the home route: fresh 10s, stale-while-revalidate 5s,
// stale-if-error 60s.
func cached(e *testSite) {
	e.Routes[0].Cache = CachePolicy{TTL: 10 * time.Second, StaleWhileRevalidate: 5 * time.Second, StaleIfError: 60 * time.Second, Query: []string{}}
}

// counting makes the fake renderer count its calls and answer with render(n).
func counting(s *stack, render func(n int64) (*ssrv1.RenderResponse, error)) *atomic.Int64 {
	var n atomic.Int64
	s.renderer.render = func(context.Context, *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
		return render(n.Add(1))
	}
	return &n
}

func body(text string) func(int64) (*ssrv1.RenderResponse, error) {
	return func(n int64) (*ssrv1.RenderResponse, error) {
		return &ssrv1.RenderResponse{Status: 200, Html: []byte(text + strings.Repeat(".", 2000)), PropsJson: []byte(`{}`)}, nil
	}
}

func getWith(t *testing.T, url string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultTransport.RoundTrip(req) // no transparent gzip: see what was sent
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestCacheLifecycle(t *testing.T) {
	s := start(t, cached)
	var calls atomic.Int64
	var failing atomic.Bool
	s.renderer.render = func(ctx context.Context, req *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
		n := calls.Add(1)
		if failing.Load() {
			return failWith(codes.Internal, "RENDER_ERR_PAGE_THREW", "boom")(ctx, req)
		}
		return body(fmt.Sprintf("version-%d", n))(n)
	}
	stored := func(version string) func() bool {
		return func() bool {
			e, _ := s.cache.Get(homeKey)
			return e != nil && strings.Contains(string(e.Bodies[""]), version)
		}
	}

	steps := []struct {
		name        string
		advance     time.Duration
		failing     bool
		wantStatus  string
		wantContent string
		wantFB      string
		thenStored  string // wait for a background refresh to store this version
		wantCalls   int64
	}{
		{name: "miss renders and stores", wantStatus: "sidecar-ssr; fwd=miss; fwd-status=200; stored", wantContent: "version-1", wantCalls: 1},
		{name: "hit", advance: 3 * time.Second, wantStatus: "sidecar-ssr; hit; ttl=7", wantContent: "version-1", wantCalls: 1},
		{name: "stale while revalidate: served at once, one refresh", advance: 9 * time.Second, wantStatus: "sidecar-ssr; hit; ttl=-2", wantContent: "version-1", thenStored: "version-2", wantCalls: 2},
		{name: "refreshed copy is fresh", wantStatus: "sidecar-ssr; hit; ttl=10", wantContent: "version-2", wantCalls: 2},
		{name: "stale-if-error: renderer fails, stale copy served", advance: 20 * time.Second, failing: true, wantStatus: "sidecar-ssr; fwd=stale; ttl=-10; detail=render-error", wantContent: "version-2", wantCalls: 3},
		{name: "past stale-if-error: client-side render", advance: 60 * time.Second, failing: true, wantStatus: "sidecar-ssr; fwd=miss; detail=render-error", wantFB: "render-error", wantCalls: 4},
	}
	for _, st := range steps {
		s.clock.advance(st.advance)
		failing.Store(st.failing)
		resp, b := get(t, s.url+"/")
		if got := resp.Header.Get("Cache-Status"); got != st.wantStatus {
			t.Errorf("%s: got Cache-Status %q, want %q", st.name, got, st.wantStatus)
		}
		if st.wantContent != "" && !strings.Contains(b, st.wantContent) {
			t.Errorf("%s: body does not hold %q", st.name, st.wantContent)
		}
		if got := resp.Header.Get("X-SSR-Fallback"); got != st.wantFB {
			t.Errorf("%s: got fallback %q, want %q", st.name, got, st.wantFB)
		}
		if st.thenStored != "" {
			poll.Until(t, st.name+": the refreshed copy", stored(st.thenStored))
		}
		if calls.Load() != st.wantCalls {
			t.Errorf("%s: %d renders so far, want %d", st.name, calls.Load(), st.wantCalls)
		}
	}
}

func TestStoredResponseHeaders(t *testing.T) {
	s := start(t, cached)
	counting(s, body("page"))
	get(t, s.url+"/")
	s.clock.advance(2500 * time.Millisecond)

	resp, plain := getWith(t, s.url+"/", nil)
	tag := resp.Header.Get("ETag")
	if resp.Header.Get("Age") != "2" || tag == "" || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("identity hit: Age %q ETag %q Content-Encoding %q", resp.Header.Get("Age"), tag, resp.Header.Get("Content-Encoding"))
	}
	if !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
		t.Errorf("got Vary %q, want Accept-Encoding", resp.Header.Get("Vary"))
	}

	resp, compressed := getWith(t, s.url+"/", map[string]string{"Accept-Encoding": "gzip;q=0.5, br"})
	if resp.Header.Get("Content-Encoding") != "br" || resp.Header.Get("ETag") == tag {
		t.Fatalf("got Content-Encoding %q ETag %q, want br with its own tag", resp.Header.Get("Content-Encoding"), resp.Header.Get("ETag"))
	}
	decoded, _ := io.ReadAll(brotli.NewReader(strings.NewReader(compressed)))
	if string(decoded) != plain || len(compressed) >= len(plain) {
		t.Errorf("brotli body: %d bytes decoding to %d, identity %d", len(compressed), len(decoded), len(plain))
	}
	if resp, _ := getWith(t, s.url+"/", map[string]string{"Accept-Encoding": "br;q=0, gzip"}); resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("br refused: got %q, want gzip", resp.Header.Get("Content-Encoding"))
	}

	for _, inm := range []string{tag, "W/" + tag, `"other", ` + tag, "*"} {
		if resp, b := getWith(t, s.url+"/", map[string]string{"If-None-Match": inm}); resp.StatusCode != 304 || b != "" {
			t.Errorf("If-None-Match %s: got %d with %d bytes, want 304 and none", inm, resp.StatusCode, len(b))
		}
	}
	if resp, _ := getWith(t, s.url+"/", map[string]string{"If-None-Match": `"other"`}); resp.StatusCode != 200 {
		t.Errorf("non-matching If-None-Match: got %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("HEAD", s.url+"/", nil)
	if resp, err := http.DefaultTransport.RoundTrip(req); err != nil || resp.StatusCode != 200 || resp.ContentLength != int64(len(plain)) {
		t.Errorf("HEAD: got %v (%v), want 200 with the identity length %d", resp, err, len(plain))
	}
}

func TestNeverStored(t *testing.T) {
	withHeader := func(name, value string) func(int64) (*ssrv1.RenderResponse, error) {
		return func(int64) (*ssrv1.RenderResponse, error) {
			return &ssrv1.RenderResponse{Status: 200, Html: []byte("x"), Headers: []*ssrv1.Header{{Name: name, Value: value}}}, nil
		}
	}
	tests := []struct {
		name   string
		render func(int64) (*ssrv1.RenderResponse, error)
	}{
		{"Set-Cookie", withHeader("set-cookie", "sid=1")},
		{"Cache-Control private", withHeader("Cache-Control", "private, max-age=60")},
		{"Cache-Control no-store", withHeader("cache-control", "no-store")},
		{"app hint no_store", func(int64) (*ssrv1.RenderResponse, error) {
			return &ssrv1.RenderResponse{Status: 200, Html: []byte("x"), Cache: &ssrv1.CacheHint{NoStore: true}}, nil
		}},
		{"temporary redirect", func(int64) (*ssrv1.RenderResponse, error) {
			return &ssrv1.RenderResponse{Status: 302, Headers: []*ssrv1.Header{{Name: "Location", Value: "/x"}}}, nil
		}},
		{"server error chosen by the page", func(int64) (*ssrv1.RenderResponse, error) {
			return &ssrv1.RenderResponse{Status: 503, Html: []byte("x")}, nil
		}},
		{"render failure (fallback)", func(int64) (*ssrv1.RenderResponse, error) {
			return nil, status.Error(codes.Internal, "boom")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, cached)
			calls := counting(s, tt.render)
			getWith(t, s.url+"/", nil)
			resp, _ := getWith(t, s.url+"/", nil)
			getWith(t, s.url+"/", nil)
			if calls.Load() != 3 {
				t.Errorf("got %d renders for 3 requests, want 3 (nothing stored)", calls.Load())
			}
			if n, _ := s.cache.Stats(); tt.name != "render failure (fallback)" && n != 1 {
				t.Errorf("want one hit-for-miss marker, got %d entries", n)
			}
			if got := resp.Header.Get("Cache-Status"); tt.name != "render failure (fallback)" && !strings.Contains(got, "detail=uncacheable") {
				t.Errorf("second request: got Cache-Status %q, want the hit-for-miss detail", got)
			}
		})
	}
}

func TestStoredStatuses(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		resp     *ssrv1.RenderResponse
		wantTTL  string
		wantCode int
	}{
		{"permanent redirect", "/", &ssrv1.RenderResponse{Status: 301, Headers: []*ssrv1.Header{{Name: "Location", Value: "/new"}}}, "ttl=10", 301},
		{"page's 404 keeps Options.NotFoundTTL", "/", &ssrv1.RenderResponse{Status: 404, Html: []byte("nf")}, "ttl=3", 404},
		{"app hint shortens ttl", "/", &ssrv1.RenderResponse{Status: 200, Html: []byte("x"), Cache: &ssrv1.CacheHint{MaxAgeSeconds: 4}}, "ttl=4", 200},
		{"unmatched paths share the not-found entry", "/a/b", &ssrv1.RenderResponse{Status: 200, Html: []byte("nf")}, "ttl=3", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, func(e *testSite) { cached(e); e.NotFoundTTL = 3 * time.Second })
			calls := counting(s, func(int64) (*ssrv1.RenderResponse, error) { return tt.resp, nil })
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			client.Get(s.url + tt.path)
			other := tt.path
			if tt.path != "/" {
				other = "/c/d?e=f"
			}
			resp, err := client.Get(s.url + other)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.Header.Get("Cache-Status"); got != "sidecar-ssr; hit; "+tt.wantTTL {
				t.Errorf("got Cache-Status %q, want a hit with %s", got, tt.wantTTL)
			}
			if calls.Load() != 1 || resp.StatusCode != tt.wantCode {
				t.Errorf("got %d renders, status %d", calls.Load(), resp.StatusCode)
			}
		})
	}
}

func TestBypass(t *testing.T) {
	s := start(t, func(e *testSite) {
		cached(e)
		e.Routes[0].Cache.PersonalizeCookies = []string{"session"}
	})
	calls := counting(s, body("x"))
	get(t, s.url+"/") // stored
	for _, h := range []map[string]string{{"Authorization": "Bearer t"}, {"Cookie": "session=abc"}} {
		resp, _ := getWith(t, s.url+"/", h)
		if !strings.HasPrefix(resp.Header.Get("Cache-Status"), "sidecar-ssr; fwd=bypass") {
			t.Errorf("%v: got Cache-Status %q, want a bypass", h, resp.Header.Get("Cache-Status"))
		}
	}
	if calls.Load() != 3 {
		t.Errorf("got %d renders, want 3 (one stored, two bypasses)", calls.Load())
	}
	if resp, _ := getWith(t, s.url+"/", map[string]string{"Cookie": "theme=dark"}); !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
		t.Errorf("an unrelated cookie bypassed the cache: %q", resp.Header.Get("Cache-Status"))
	}
}

func TestCoalescing(t *testing.T) {
	s := start(t, cached)
	release := make(chan struct{})
	var calls atomic.Int64
	s.renderer.render = func(context.Context, *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
		calls.Add(1)
		<-release
		return &ssrv1.RenderResponse{Status: 200, Html: []byte("once"), PropsJson: []byte("{}")}, nil
	}

	// The leader's client goes away; the render must still serve everyone else.
	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leaderReq, _ := http.NewRequestWithContext(leaderCtx, "GET", s.url+"/", nil)
	go http.DefaultClient.Do(leaderReq)
	poll.Until(t, "the leader's render to start", func() bool { return calls.Load() == 1 })
	cancelLeader()

	const followers = 500
	transport := &http.Transport{MaxIdleConnsPerHost: followers, MaxConnsPerHost: 0}
	client := &http.Client{Transport: transport}
	var wg sync.WaitGroup
	var served, collapsed atomic.Int64
	for range followers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get(s.url + "/")
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && strings.Contains(string(b), "once") {
				served.Add(1)
			}
			if strings.Contains(resp.Header.Get("Cache-Status"), "collapsed") {
				collapsed.Add(1)
			}
		}()
	}
	poll.Until(t, "every follower to join the flight", func() bool { return testutilCount(s, "edge_cache_collapsed_total") == followers })
	close(release)
	wg.Wait()
	if calls.Load() != 1 {
		t.Errorf("got %d renders for %d concurrent misses, want 1", calls.Load(), followers+1)
	}
	if served.Load() != followers {
		t.Errorf("%d of %d followers got the rendered page", served.Load(), followers)
	}
	if collapsed.Load() != followers {
		t.Errorf("%d of %d followers said collapsed", collapsed.Load(), followers)
	}
}

func TestLateRenderFillsTheCache(t *testing.T) {
	s := start(t, func(e *testSite) { cached(e); e.Timeouts.Render = 100 * time.Millisecond })
	release := make(chan struct{})
	s.renderer.render = func(ctx context.Context, _ *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
		select {
		case <-release:
			return &ssrv1.RenderResponse{Status: 200, Html: []byte("late")}, nil
		case <-ctx.Done(): // a cacheable render must not be withdrawn with its request
			return nil, ctx.Err()
		}
	}
	resp, _ := get(t, s.url+"/")
	if got := resp.Header.Get("X-SSR-Fallback"); got != ReasonTimeout {
		t.Fatalf("got fallback %q, want %q", got, ReasonTimeout)
	}
	close(release)
	poll.Until(t, "the late render to be stored", func() bool {
		e, _ := s.cache.Get(homeKey)
		return e != nil && !e.Pass
	})
}

func TestShedding(t *testing.T) {
	s := start(t, func(e *testSite) { cached(e); e.RenderSlots = 1 })
	release := make(chan struct{})
	defer close(release)
	s.renderer.render = func(_ context.Context, req *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
		<-release
		return &ssrv1.RenderResponse{Status: 200, Html: []byte("x")}, nil
	}
	go http.Get(s.url + "/?page=1") // takes the only slot
	<-s.renderer.got
	// Were it not shed, this request would wait out the 10s render timeout and
	// say "timeout"; the reason alone tells the two apart.
	resp, _ := get(t, s.url+"/products/9")
	if got := resp.Header.Get("X-SSR-Fallback"); got != ReasonOverloaded {
		t.Errorf("got fallback %q, want %q", got, ReasonOverloaded)
	}
}

func TestKeys(t *testing.T) {
	rule := func(query []string, variants ...string) keyRule {
		return newKeyRule(Route{Pattern: "GET /p/", Variants: variants, Cache: CachePolicy{Query: query}})
	}
	tests := []struct {
		name    string
		rule    keyRule
		url     string
		header  map[string]string
		wantURL string
		wantKey string
	}{
		{"plain", rule(nil), "/products/7", nil, "/products/7", "b GET /p/ /products/7"},
		{"query sorted", rule(nil), "/?b=2&a=1", nil, "/?a=1&b=2", "b GET /p/ /?a=1&b=2"},
		{"tracking parameters dropped", rule(nil), "/?utm_source=x&fbclid=y&q=z&utm_medium=m", nil, "/?q=z", "b GET /p/ /?q=z"},
		{"only declared parameters", rule([]string{"page"}), "/?page=2&sort=asc", nil, "/?page=2", "b GET /p/ /?page=2"},
		{"declared parameter absent", rule([]string{"page"}), "/?sort=asc", nil, "/", "b GET /p/ /"},
		{"repeated values keep their order", rule(nil), "/?t=b&t=a", nil, "/?t=b&t=a", "b GET /p/ /?t=b&t=a"},
		{"escaping normalized", rule(nil), "/products/%41%62", nil, "/products/Ab", "b GET /p/ /products/Ab"},
		{"lower-case escapes normalized", rule(nil), "/products/a%c3%a9", nil, "/products/a%C3%A9", "b GET /p/ /products/a%C3%A9"},
		{"escaped slash stays escaped", rule(nil), "/items/7%2Freviews", nil, "/items/7%2Freviews", "b GET /p/ /items/7%2Freviews"},
		{"escaped slash, lower case", rule(nil), "/items/7%2freviews", nil, "/items/7%2Freviews", "b GET /p/ /items/7%2Freviews"},
		{"escaped percent stays escaped", rule(nil), "/items/7%252F", nil, "/items/7%252F", "b GET /p/ /items/7%252F"},
		{"variants", rule(nil, "header:Accept-Language", "cookie:currency"), "/", map[string]string{"Accept-Language": " DE ", "Cookie": "currency=EUR"},
			"/", "b GET /p/ /\x00cookie:currency=EUR\x00header:Accept-Language=de"},
		{"missing cookie variant", rule(nil, "cookie:currency"), "/", nil, "/", "b GET /p/ /\x00cookie:currency"},
		{"empty cookie variant", rule(nil, "cookie:currency"), "/", map[string]string{"Cookie": "currency="}, "/", "b GET /p/ /\x00cookie:currency="},
		{"missing header variant", rule(nil, "header:Accept-Language"), "/", nil, "/", "b GET /p/ /\x00header:Accept-Language="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, _ := url.Parse(tt.url)
			r := &http.Request{URL: u, Header: http.Header{}}
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			gotURL := tt.rule.renderURL(u)
			if gotURL != tt.wantURL {
				t.Errorf("got url %q, want %q", gotURL, tt.wantURL)
			}
			if got := tt.rule.key("b", gotURL, tt.rule.variantValues(r)); got != tt.wantKey {
				t.Errorf("got key %q, want %q", got, tt.wantKey)
			}
		})
	}
}

func TestPurge(t *testing.T) {
	s := start(t, func(e *testSite) {
		cached(e)
		e.Routes[1].Cache = e.Routes[0].Cache
	})
	calls := counting(s, body("x"))
	for _, p := range []string{"/", "/products/1", "/products/2"} {
		get(t, s.url+p)
	}
	adminHandler := admin.Handler(admin.Options{Draining: new(atomic.Bool), Gatherer: s.registry, Token: "t", Cache: localPurger{s.cache}})
	purge := func(query string) string {
		req, _ := http.NewRequest("POST", "/cache/purge?"+query, nil)
		req.Header.Set("Authorization", "Bearer t")
		rec := &recorder{header: http.Header{}}
		adminHandler.ServeHTTP(rec, req)
		return rec.body.String()
	}
	if got := purge("prefix=/products/"); got != `{"purged":2}`+"\n" {
		t.Errorf("prefix purge: got %s", got)
	}
	if got := purge("path=/"); got != `{"purged":1}`+"\n" {
		t.Errorf("path purge: got %s", got)
	}
	if got := purge(""); !strings.Contains(got, "purge needs") {
		t.Errorf("empty purge: got %s", got)
	}
	get(t, s.url+"/")
	if calls.Load() != 4 {
		t.Errorf("after purging, / was not rendered again (%d renders)", calls.Load())
	}
}

type recorder struct {
	header http.Header
	body   strings.Builder
	code   int
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int)        { r.code = code }
