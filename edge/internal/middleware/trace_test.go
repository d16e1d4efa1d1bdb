package middleware

import (
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestWithTracingOff: with no tracer the route's handler is served as it is, with no layer
// to cost a request anything.
func TestWithTracingOff(t *testing.T) {
	h := http.NewServeMux()
	if got := Trace(nil, "GET /p")(h); got != http.Handler(h) {
		t.Errorf("got %T, want the handler itself", got)
	}
}

func TestWithTracing(t *testing.T) {
	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	tests := []struct {
		name        string
		traceparent string
		wantParent  bool
	}{
		{"a caller's traceparent is continued", "00-" + callerTrace + "-" + callerSpan + "-01", true},
		{"no traceparent: a new trace", "", false},
		{"a malformed traceparent: a new trace", "00-nonsense-01", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exporter := tracetest.NewInMemoryExporter()
			tracer := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter)).Tracer("test")
			var inside trace.SpanContext
			h := WithRequestID(Trace(tracer, "GET /products/{id}")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				inside = trace.SpanContextFromContext(r.Context())
			})))
			req := httptest.NewRequest("GET", "/products/7", nil)
			req.Header.Set("X-Request-Id", "req-1")
			if tt.traceparent != "" {
				req.Header.Set("traceparent", tt.traceparent)
			}
			h.ServeHTTP(httptest.NewRecorder(), req)

			spans := exporter.GetSpans()
			if len(spans) != 1 {
				t.Fatalf("got %d spans, want 1", len(spans))
			}
			span := spans[0]
			if span.Name != "GET /products/{id}" || span.SpanKind != trace.SpanKindServer || inside.SpanID() != span.SpanContext.SpanID() {
				t.Errorf("span %q kind %v, handler in span %v: want the route's server span around the handler", span.Name, span.SpanKind, inside.SpanID())
			}
			if continued := span.SpanContext.TraceID().String() == callerTrace && span.Parent.SpanID().String() == callerSpan; continued != tt.wantParent {
				t.Errorf("trace %s, parent %s: continued the caller's %v, want %v", span.SpanContext.TraceID(), span.Parent.SpanID(), continued, tt.wantParent)
			}
			attrs := attributes(span)
			for key, want := range map[string]string{"http.request.method": "GET", "http.route": "/products/{id}", "url.path": "/products/7", "ssr.request_id": "req-1"} {
				if attrs[key] != want {
					t.Errorf("%s = %q, want %q", key, attrs[key], want)
				}
			}
		})
	}
}

// attributes are a span's attributes as text, by key.
func attributes(span tracetest.SpanStub) map[string]string {
	attrs := map[string]string{}
	for _, kv := range span.Attributes {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	return attrs
}
