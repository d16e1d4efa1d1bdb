package middleware

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func TestWithRequestID(t *testing.T) {
	generated := regexp.MustCompile(`^[0-9a-f]{16}$`)
	tests := []struct {
		name, sent string
		want       string // "" means a generated id
	}{
		{"caller's id kept", "req-1.A_b", "req-1.A_b"},
		{"no id: one is made", "", ""},
		{"too long: replaced", strings.Repeat("a", 65), ""},
		{"unsafe characters: replaced", "a b<script>", ""},
		{"longest sane id kept", strings.Repeat("z", 64), strings.Repeat("z", 64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen string
			h := WithRequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = RequestID(r.Context()) }))
			req := httptest.NewRequest("GET", "/", nil)
			if tt.sent != "" {
				req.Header.Set("X-Request-Id", tt.sent)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			echoed := rec.Header().Get("X-Request-Id")
			if echoed != seen {
				t.Errorf("echoed %q, the handler saw %q: want the same id", echoed, seen)
			}
			if tt.want != "" && seen != tt.want {
				t.Errorf("got id %q, want %q", seen, tt.want)
			}
			if tt.want == "" && !generated.MatchString(seen) {
				t.Errorf("got id %q, want 16 random hex digits", seen)
			}
		})
	}
}

// TestWithRequestIDNested: a page mounted inside the edge's mux is wrapped twice; the outer
// layer's id is the request's, and the inner one neither replaces nor echoes another.
func TestWithRequestIDNested(t *testing.T) {
	var seen string
	inner := WithRequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = RequestID(r.Context()) }))
	outer := WithRequestID(inner)
	rec := httptest.NewRecorder()
	outer.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if got := rec.Header().Values("X-Request-Id"); len(got) != 1 || got[0] != seen {
		t.Errorf("X-Request-Id %q, the page saw %q: want one header, the outer id", got, seen)
	}
}
