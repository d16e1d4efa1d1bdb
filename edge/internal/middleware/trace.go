package middleware

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceContext is W3C Trace Context, in and out, whatever the process's global propagator.
var traceContext = propagation.TraceContext{}

// Trace opens a request's server span, named by its route, as a child of the caller's
// when a traceparent says so (the sampler follows the caller's sampled flag). With tracing
// off (a nil tracer) it is not in the chain at all.
func Trace(tracer trace.Tracer, route string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if tracer == nil {
			return next
		}
		return traced(tracer, route, next)
	}
}

func traced(tracer trace.Tracer, route string, next http.Handler) http.Handler {
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

// TraceAnswer puts what a request was answered with on its span (the count of requests
// knows it).
func TraceAnswer(r *http.Request, w http.ResponseWriter, code int, outcome string) {
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
