// Package tracing starts the edge binary's OpenTelemetry SDK: spans batched to a collector
// over OTLP/gRPC. (The public package only takes a TracerProvider: a shop has its own SDK.)
package tracing

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ServiceName is the service.name on the edge's spans.
const ServiceName = "sidecar-ssr-edge"

// exportTimeout bounds one export: at shutdown the last one must fit in the pod's grace
// period even when the collector is gone.
const exportTimeout = 2 * time.Second

// Start returns a provider that keeps ratio of the requests' traces, a caller's included
// (its traceparent is continued, but its sampled flag decides nothing: any client could
// otherwise make every request it sends cost a trace), and sends them to endpoint (http://host:port, or https:// for
// TLS). It connects lazily: a collector that is down costs dropped spans, never requests.
// Shut it down to send what is still buffered.
func Start(ctx context.Context, endpoint string, ratio float64) (*sdktrace.TracerProvider, error) {
	exporter, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(endpoint), otlptracegrpc.WithTimeout(exportTimeout))
	if err != nil {
		return nil, err
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter, sdktrace.WithExportTimeout(exportTimeout)),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", ServiceName))),
		sdktrace.WithSampler(Sampler(ratio)),
	), nil
}

// Sampler keeps ratio of the traces that start here or come from a caller, by a coin of its
// own: not by the trace id (TraceIDRatioBased), which a caller chooses, nor by the caller's
// sampled flag. Spans under a span of this process follow it.
func Sampler(ratio float64) sdktrace.Sampler {
	coin := coinSampler{ratio}
	return sdktrace.ParentBased(coin, sdktrace.WithRemoteParentSampled(coin), sdktrace.WithRemoteParentNotSampled(coin))
}

type coinSampler struct{ ratio float64 }

func (c coinSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	decision := sdktrace.Drop
	if rand.Float64() < c.ratio {
		decision = sdktrace.RecordAndSample
	}
	return sdktrace.SamplingResult{Decision: decision, Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
}

func (c coinSampler) Description() string { return fmt.Sprintf("CoinSampler{%g}", c.ratio) }
