package server

import (
	"bufio"
	"cmp"
	"context"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/middleware"
)

// count counts the requests h answers under route (its pattern, or the page's name where
// the shop's router mounts it); traced: middleware.Trace wraps it, and the answer goes on the
// request's span.
func (m *Metrics) count(route string, traced bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		if outer, ok := r.Context().Value(answeredKey{}).(*unanswered); ok {
			outer.answered = true
		}
		h.ServeHTTP(rec, r)
		outcome := "ssr"
		switch {
		case rec.code == 0:
			outcome = "client-closed"
		case route == assetsPattern:
			outcome = "asset"
		case w.Header().Get("X-SSR-Fallback") != "":
			outcome = w.Header().Get("X-SSR-Fallback")
		}
		m.requests.WithLabelValues(route, strconv.Itoa(rec.code), outcome).Inc()
		m.requestDuration.WithLabelValues(route, outcome).Observe(time.Since(began).Seconds())
		if traced {
			middleware.TraceAnswer(r, w, rec.code, outcome)
		}
	})
}

// answeredKey is the context key of the record countUnanswered keeps of each request: a
// page that answers it (count) says so there.
type answeredKey struct{}

// unanswered is countUnanswered's record of a request: its status, whether a page answered
// it, and the route the shop's router named (NameRoute). One allocation holds them.
type unanswered struct {
	statusRecorder
	answered bool
	route    string
}

// countUnanswered counts the requests no page of the site answers: the router's own (a
// 404, a 405, a redirect to a cleaned path) and the shop's other handlers, under the route
// the router named (NameRoute), else the ServeMux pattern that matched, else "(none)".
// Pages count their own.
func (m *Metrics) countUnanswered(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &unanswered{statusRecorder: statusRecorder{ResponseWriter: w}}
		inner := r.WithContext(context.WithValue(r.Context(), answeredKey{}, rec))
		h.ServeHTTP(&rec.statusRecorder, inner)
		if !rec.answered {
			route := cmp.Or(rec.route, inner.Pattern, "(none)")
			m.requests.WithLabelValues(route, strconv.Itoa(rec.code), "ssr").Inc()
		}
	})
}

// NameRoute names the route r was routed by, for a request behind Wrap that no page
// answers; "" leaves it unnamed.
func NameRoute(r *http.Request, route string) {
	if rec, ok := r.Context().Value(answeredKey{}).(*unanswered); ok {
		rec.route = route
	}
}

// statusRecorder remembers the status code written, and whether a flush came through it.
// It flushes and hijacks through to what it wraps, whichever way it is asked: routers assert
// http.Flusher and http.Hijacker on the writer they wrap (Gin's Flush does nothing
// otherwise), http.ResponseController asks FlushError first, then Unwrap.
type statusRecorder struct {
	http.ResponseWriter
	code    int
	flushed bool
}

func (s *statusRecorder) WriteHeader(code int) {
	// An informational response (103 Early Hints) comes before the real one.
	if s.code == 0 && (code < 100 || code > 199) {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) FlushError() error {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	s.flushed = true
	return http.NewResponseController(s.ResponseWriter).Flush()
}

func (s *statusRecorder) Flush() { s.FlushError() }

func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(s.ResponseWriter).Hijack()
}
