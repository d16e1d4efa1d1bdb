package server

import (
	"net/http"
	"strconv"
	"time"
)

// count counts the requests h answers under route (its pattern, or the page's name where
// the shop's router mounts it); traced: withTracing wraps it, and the answer goes on the
// request's span.
func (m *Metrics) count(route string, traced bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
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
			traceAnswer(r, w, rec.code, outcome)
		}
	})
}

// countUnrouted counts the requests a ServeMux answers itself (405, a redirect to a cleaned
// path); the handlers it routes to count their own. It must wrap the mux directly: the mux
// records the pattern on the *http.Request it was given.
func (m *Metrics) countUnrouted(mux http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		mux.ServeHTTP(rec, r)
		if r.Pattern == "" {
			m.requests.WithLabelValues("(none)", strconv.Itoa(rec.code), "ssr").Inc()
		}
	})
}

// statusRecorder remembers the status code written.
type statusRecorder struct {
	http.ResponseWriter
	code int
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
