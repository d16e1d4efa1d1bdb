package middleware

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWithRecover(t *testing.T) {
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		wantCode int
		wantLog  string // "" means nothing logged
	}{
		{"no panic", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }, http.StatusTeapot, ""},
		{"a bug in the edge", func(w http.ResponseWriter, r *http.Request) { panic("nil map") }, http.StatusInternalServerError, "edge bug: handler panicked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			h := WithRequestID(Recover(slog.New(slog.NewJSONHandler(&logs, nil)))(tt.handler))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/p", nil))
			if rec.Code != tt.wantCode {
				t.Errorf("got %d, want %d", rec.Code, tt.wantCode)
			}
			if tt.wantLog == "" && logs.Len() != 0 {
				t.Errorf("logged %s, want nothing", logs.String())
			}
			if tt.wantLog != "" && (!strings.Contains(logs.String(), tt.wantLog) || !strings.Contains(logs.String(), rec.Header().Get("X-Request-Id"))) {
				t.Errorf("logged %s, want %q with the request id", logs.String(), tt.wantLog)
			}
		})
	}
}

// TestWithRecoverLeavesAbortHandler: http.ErrAbortHandler is how a handler asks net/http to
// drop the connection; turning it into a 500 would defeat it.
func TestWithRecoverLeavesAbortHandler(t *testing.T) {
	h := Recover(slog.New(slog.DiscardHandler))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Errorf("got panic %v, want http.ErrAbortHandler to go on up", v)
		}
	}()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	t.Error("the panic was swallowed")
}
