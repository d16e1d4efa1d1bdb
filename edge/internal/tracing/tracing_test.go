package tracing

import (
	"context"
	"net"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// A collector that is not there costs the spans, and at shutdown one export's timeout: the
// pod's grace period (here the context given to Shutdown) is not spent waiting for it.
func TestCollectorDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now

	tp, err := Start(context.Background(), endpoint, 1)
	if err != nil {
		t.Fatalf("Start must not need the collector: %v", err)
	}
	_, span := tp.Tracer("test").Start(context.Background(), "request")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 15*exportTimeout)
	defer cancel()
	reported := make(chan error, 10)
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { reported <- err }))
	tp.Shutdown(ctx)
	select {
	case <-reported: // the edge binary logs these
	default:
		t.Error("no error reported for spans sent to a collector that is not there")
	}
	if ctx.Err() != nil {
		t.Errorf("Shutdown with the collector down spent the whole grace period (%s): the export's own timeout (%s) must end it first", 15*exportTimeout, exportTimeout)
	}
}

// TestCallersCannotForceSampling: a caller's sampled flag, or a trace id chosen to fall
// under the ratio, does not make this process keep a trace; its own coin does.
func TestCallersCannotForceSampling(t *testing.T) {
	tests := []struct {
		ratio float64
		want  bool
	}{{0, false}, {1, true}}
	for _, tt := range tests {
		sampler := Sampler(tt.ratio)
		for _, flags := range []trace.TraceFlags{0, trace.FlagsSampled} {
			parent := trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: trace.TraceID{}, SpanID: trace.SpanID{1}, TraceFlags: flags, Remote: true,
			})
			parent = parent.WithTraceID(trace.TraceID{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}) // the lowest id: TraceIDRatioBased keeps it at any ratio
			got := sampler.ShouldSample(sdktrace.SamplingParameters{
				ParentContext: trace.ContextWithRemoteSpanContext(context.Background(), parent), TraceID: parent.TraceID(), Name: "GET /",
			}).Decision == sdktrace.RecordAndSample
			if got != tt.want {
				t.Errorf("ratio %g, caller's flags %v: sampled %v, want %v", tt.ratio, flags, got, tt.want)
			}
		}
	}
}
