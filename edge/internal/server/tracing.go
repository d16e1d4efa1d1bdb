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

// outgoing is ctx with the metadata of a render call: the request id, and with tracing on,
// the traceparent of the call's span.
func (d *deps) outgoing(ctx context.Context) context.Context {
	md := metadata.MD{}
	if id := RequestID(ctx); id != "" {
		md.Set(requestIDMetadata, id)
	}
	if d.tracer != nil {
		traceContext.Inject(ctx, metadataCarrier(md))
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// metadataCarrier lets a propagator write gRPC metadata.
type metadataCarrier metadata.MD

func (c metadataCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c metadataCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c metadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// endRender closes a render call's span with how it went.
func endRender(span trace.Span, err error) {
	if err != nil {
		span.SetAttributes(attribute.String("ssr.reason", reasonFor(err)))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
