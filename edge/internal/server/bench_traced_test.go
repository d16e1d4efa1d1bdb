package server

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkServeRenderTraced: BenchmarkServeRender with every request traced by the SDK, as
// the edge binary sets it up, its spans batched to an exporter that drops them.
func BenchmarkServeRenderTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { tp.Shutdown(b.Context()) })
	renderBench(b, start(b, noEarlyHints, func(o *Options) { o.Tracer = tp.Tracer("bench") }))
}
