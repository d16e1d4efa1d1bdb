package server

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc/metadata"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/middleware"
)

// renderSpan and islandsSpan name the render calls on both sides: the edge's client span,
// the renderer's server span.
const (
	renderSpan  = "ssr.v1.RenderService/Render"
	islandsSpan = "ssr.v1.RenderService/RenderIslands"
)

// requestIDMetadata carries the request's id to the renderer, for its logs and spans.
const requestIDMetadata = "x-request-id"

// traceContext is W3C Trace Context, in and out, whatever the process's global propagator.
var traceContext = propagation.TraceContext{}

// span starts a child of ctx's span, or does nothing when tracing is off.
func (d *deps) span(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if d.tracer == nil {
		return ctx, noop.Span{}
	}
	return d.tracer.Start(ctx, name, opts...)
}

// callSpan starts the span of a render call (name: renderSpan, islandsSpan), or does nothing
// when tracing is off (its options cost allocations even then).
func (d *deps) callSpan(ctx context.Context, name, page string) (context.Context, trace.Span) {
	if d.tracer == nil {
		return ctx, noop.Span{}
	}
	return d.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("rpc.system", "grpc"), attribute.String("ssr.page", page)))
}

// origin is the span a flight started by this request's context belongs to (none with
// tracing off: no lookup on the render path).
func (d *deps) origin(ctx context.Context) trace.SpanContext {
	if d.tracer == nil {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(ctx)
}

// outgoing is ctx with the metadata of a render call: the request id, and with tracing on,
// the traceparent of the call's span. (AppendToOutgoingContext defers building the
// metadata map to the transport, which builds its own anyway.)
func (d *deps) outgoing(ctx context.Context) context.Context {
	id := middleware.RequestID(ctx)
	if d.tracer == nil {
		// Apart, so that the carrier below, which escapes, costs nothing with tracing off.
		if id == "" {
			return ctx
		}
		return metadata.AppendToOutgoingContext(ctx, requestIDMetadata, id)
	}
	var kv pairs
	if id != "" {
		kv = append(kv, requestIDMetadata, id)
	}
	traceContext.Inject(ctx, &kv)
	if len(kv) == 0 {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// pairs collects what a propagator writes, as gRPC metadata's key, value list.
type pairs []string

func (p *pairs) Set(key, value string) { *p = append(*p, strings.ToLower(key), value) }

func (p *pairs) Get(key string) string {
	for i := 0; i+1 < len(*p); i += 2 {
		if (*p)[i] == key {
			return (*p)[i+1]
		}
	}
	return ""
}

func (p *pairs) Keys() []string {
	keys := make([]string, 0, len(*p)/2)
	for i := 0; i < len(*p); i += 2 {
		keys = append(keys, (*p)[i])
	}
	return keys
}

// endRender closes a render call's span with how it went.
func endRender(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetAttributes(attribute.String("ssr.reason", reasonFor(err)))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
