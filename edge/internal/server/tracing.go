package server

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc/metadata"
)

// renderSpan names the render call on both sides: the edge's client span, the renderer's
// server span.
const renderSpan = "ssr.v1.RenderService/Render"

// requestIDMetadata carries the request's id to the renderer, for its logs and spans.
const requestIDMetadata = "x-request-id"

// traceContext is W3C Trace Context, in and out, whatever the process's global propagator.
var traceContext = propagation.TraceContext{}

// withTracing opens a request's server span, named by its route, as a child of the caller's
// when a traceparent says so (the sampler follows the caller's sampled flag). With tracing
// off it is not in the chain at all.
func withTracing(tracer trace.Tracer, route string, next http.Handler) http.Handler {
	if tracer == nil {
		return next
	}
	_, pattern, _ := strings.Cut(route, " ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, route, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("http.route", pattern),
			attribute.String("url.path", r.URL.Path),
			attribute.String("ssr.request_id", RequestID(ctx)),
		))
		defer span.End()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// traceAnswer puts what a request was answered with on its span (metrics.count knows it).
func traceAnswer(r *http.Request, w http.ResponseWriter, code int, outcome string) {
	span := trace.SpanFromContext(r.Context())
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(
		attribute.Int("http.response.status_code", code),
		attribute.String("ssr.outcome", outcome),
		attribute.String("ssr.cache", w.Header().Get("Cache-Status")),
	)
	if code >= 500 {
		span.SetStatus(codes.Error, outcome)
	}
}

// span starts a child of ctx's span, or does nothing when tracing is off.
func (d *deps) span(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if d.tracer == nil {
		return ctx, noop.Span{}
	}
	return d.tracer.Start(ctx, name, opts...)
}

// callSpan starts the span of a render call, or does nothing when tracing is off (its
// options cost allocations even then).
func (d *deps) callSpan(ctx context.Context, page string) (context.Context, trace.Span) {
	if d.tracer == nil {
		return ctx, noop.Span{}
	}
	return d.tracer.Start(ctx, renderSpan, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("rpc.system", "grpc"), attribute.String("ssr.page", page)))
}

// outgoing is ctx with the metadata of a render call: the request id, and with tracing on,
// the traceparent of the call's span. (AppendToOutgoingContext defers building the
// metadata map to the transport, which builds its own anyway.)
func (d *deps) outgoing(ctx context.Context) context.Context {
	var kv pairs
	if id := RequestID(ctx); id != "" {
		kv = append(kv, requestIDMetadata, id)
	}
	if d.tracer != nil {
		traceContext.Inject(ctx, &kv)
	}
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
