package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc/metadata"

	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

func TestTracing(t *testing.T) {
	const (
		callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		callerSpan  = "00f067aa0ba902b7"
	)
	for _, on := range []bool{false, true} {
		exporter := tracetest.NewInMemoryExporter()
		provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
		s := start(t, nil, func(o *Options) {
			if on {
				o.Tracer = provider.Tracer("test")
			}
		})
		var sent metadata.MD
		s.renderer.render = func(ctx context.Context, req *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
			sent, _ = metadata.FromIncomingContext(ctx)
			return renders("<main>x</main>")(ctx, req)
		}
		req, _ := http.NewRequest("GET", s.url+"/products/7", nil)
		req.Header.Set("traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
		req.Header.Set("X-Request-Id", "req-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()

		if got := sent.Get(requestIDMetadata); len(got) != 1 || got[0] != "req-1" {
			t.Errorf("tracing %v: the renderer got request id %q, want req-1", on, got)
		}
		traceparent := sent.Get("traceparent")
		if !on {
			if len(traceparent) != 0 || len(exporter.GetSpans()) != 0 {
				t.Errorf("tracing off: traceparent %q sent, %d spans", traceparent, len(exporter.GetSpans()))
			}
			continue
		}
		spans := map[string]tracetest.SpanStub{}
		for _, span := range exporter.GetSpans() {
			spans[span.Name] = span
		}
		server, call := spans["GET /products/{id}"], spans[renderSpan]
		if server.SpanContext.TraceID().String() != callerTrace || server.Parent.SpanID().String() != callerSpan {
			t.Errorf("request span: trace %s parent %s, want the caller's %s %s", server.SpanContext.TraceID(), server.Parent.SpanID(), callerTrace, callerSpan)
		}
		if call.Parent.SpanID() != server.SpanContext.SpanID() {
			t.Errorf("render call's parent %s, want the request's span %s", call.Parent.SpanID(), server.SpanContext.SpanID())
		}
		if want := "00-" + callerTrace + "-" + call.SpanContext.SpanID().String() + "-01"; len(traceparent) != 1 || traceparent[0] != want {
			t.Errorf("the renderer got traceparent %q, want %q (the render call's span)", traceparent, want)
		}
		attrs := map[string]string{}
		for _, kv := range server.Attributes {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		for key, want := range map[string]string{"ssr.request_id": "req-1", "ssr.outcome": "ssr", "http.response.status_code": "200", "http.route": "/products/{id}"} {
			if attrs[key] != want {
				t.Errorf("request span: %s = %q, want %q", key, attrs[key], want)
			}
		}
		if !strings.Contains(attrs["ssr.cache"], "fwd=") {
			t.Errorf("request span: ssr.cache = %q, want the Cache-Status", attrs["ssr.cache"])
		}
	}
}
