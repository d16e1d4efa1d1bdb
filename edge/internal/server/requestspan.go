package server

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

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
