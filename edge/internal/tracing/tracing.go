// Package tracing starts the edge binary's OpenTelemetry SDK: spans batched to a collector
// over OTLP/gRPC. (The public package only takes a TracerProvider: a shop has its own SDK.)
package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// ServiceName is the service.name on the edge's spans.
const ServiceName = "sidecar-ssr-edge"

// exportTimeout bounds one export: at shutdown the last one must fit in the pod's grace
// period even when the collector is gone.
const exportTimeout = 2 * time.Second

// Start returns a provider that keeps ratio of the traces starting here (a caller's sampled
// flag decides for the rest) and sends them to endpoint (http://host:port, or https:// for
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
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
	), nil
}
