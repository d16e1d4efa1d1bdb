package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// BenchmarkServeHit is the whole public handler answering a cache hit of a 200 KB page; with
// a CSP nonce, each hit gets its own nonce and is compressed as it is sent.
func BenchmarkServeHit(b *testing.B) {
	for _, nonce := range []bool{false, true} {
		var options []func(*Options)
		if nonce {
			options = append(options, func(o *Options) { o.Nonce = func(*http.Request) string { return "rAnd0mNonce" } })
		}
		s := start(b, func(e *testSite) {
			e.Routes[0].Cache = CachePolicy{TTL: time.Hour, Query: []string{}}
		}, options...)
		s.renderer.render = func(_ context.Context, _ *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
			return &ssrv1.RenderResponse{Status: 200, Html: []byte(strings.Repeat("<div class=card>x</div>", 9000)), PropsJson: []byte(`{}`)}, nil
		}
		http.Get(s.url + "/") // stores it
		for _, enc := range []string{"identity", "br"} {
			name := enc
			if nonce {
				name += ",nonce"
			}
			b.Run(name, func(b *testing.B) {
				req := httptest.NewRequest("GET", "/?utm_source=x", nil)
				req.Header.Set("Accept-Encoding", enc)
				serveEach(b, s.handler, req)
			})
		}
	}
}

// serveEach has h answer req, 200, in every iteration of the benchmark.
func serveEach(b *testing.B, h http.Handler, req *http.Request) {
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}

func BenchmarkKey(b *testing.B) {
	rule := newKeyRule(Route{Variants: []string{"header:Accept-Language"}})
	u, _ := url.Parse("/products/7?utm_source=news&color=red&size=m&fbclid=abc")
	r := &http.Request{URL: u, Header: http.Header{"Accept-Language": {"de-DE,de;q=0.9"}}}
	b.ReportAllocs()
	for b.Loop() {
		rule.key("build", rule.renderURL(u), rule.variantValues(r))
	}
}
