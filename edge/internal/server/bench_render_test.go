package server

import (
	"context"
	"net/http/httptest"
	"testing"

	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// renderBench is the whole public handler answering an uncached page: the render call goes
// over real gRPC on a unix socket to a renderer that answers at once.
func renderBench(b *testing.B, s *stack) {
	s.renderer.render = func(_ context.Context, _ *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
		return &ssrv1.RenderResponse{Status: 200, Html: []byte("<main>a page</main>"), PropsJson: []byte(`{}`)}, nil
	}
	go func() {
		for range s.renderer.got { // start's fake keeps each request it gets
		}
	}()
	serveEach(b, s.handler, httptest.NewRequest("GET", "/products/7", nil))
}

// noEarlyHints: httptest.ResponseRecorder takes a 103 for the final status.
func noEarlyHints(e *testSite) { e.EarlyHints = false }

// BenchmarkServeRender: an uncached page, tracing off.
func BenchmarkServeRender(b *testing.B) { renderBench(b, start(b, noEarlyHints)) }
