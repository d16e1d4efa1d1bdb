package middleware

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// deadlines is a writer that records the write deadlines set on it.
type deadlines struct {
	*httptest.ResponseRecorder
	set []time.Time
}

func (d *deadlines) SetWriteDeadline(t time.Time) error {
	d.set = append(d.set, t)
	return nil
}

// TestWriteDeadline: a response on a server without a WriteTimeout is bounded while its
// handler runs and unbounded again after it; a server's own timeout, or its explicit none,
// is left alone.
func TestWriteDeadline(t *testing.T) {
	const bound = 30 * time.Second
	tests := []struct {
		name    string
		server  *http.Server // nil: none in the request's context
		bounded bool
	}{
		{"no WriteTimeout", &http.Server{}, true},
		{"a WriteTimeout of its own", &http.Server{WriteTimeout: 5 * time.Second}, false},
		{"none, explicitly", &http.Server{WriteTimeout: -1}, false},
		{"no server", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &deadlines{ResponseRecorder: httptest.NewRecorder()}
			r := httptest.NewRequest("GET", "/", nil)
			if tt.server != nil {
				r = r.WithContext(context.WithValue(r.Context(), http.ServerContextKey, tt.server))
			}
			var during []time.Time
			start := time.Now()
			WriteDeadline(bound)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				during = append(during, w.set...)
			})).ServeHTTP(w, r)
			if !tt.bounded {
				if len(w.set) != 0 {
					t.Fatalf("deadlines set: %v", w.set)
				}
				return
			}
			if len(during) != 1 || during[0].Before(start.Add(bound)) || during[0].After(time.Now().Add(bound)) {
				t.Fatalf("while the handler ran: deadlines %v, want one %s after it started", during, bound)
			}
			if len(w.set) != 2 || !w.set[1].IsZero() {
				t.Fatalf("after the handler: deadlines %v, want the bound cleared", w.set)
			}
		})
	}
}
