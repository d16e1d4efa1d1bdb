package ssr

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestRenderWithAStatus: Render answers with the Result's status and keeps the headers the
// edge sets (Cache-Status, Vary, Server-Timing), with nothing logged as superfluous.
func TestRenderWithAStatus(t *testing.T) {
	tests := []struct {
		name       string
		result     Result
		down       bool
		wantStatus int
		wantErr    bool
	}{
		{"teapot", Result{Props: map[string]int{"n": 1}, Status: 418}, false, 418, false},
		{"not found", Result{NotFound: true}, false, 404, false},
		{"redirect", Result{Redirect: "/login"}, false, 302, false},
		{"teapot, renderer down", Result{Props: map[string]int{"n": 1}, Status: 418}, true, 418, true},
		{"ok, renderer down", Result{Props: map[string]int{"n": 1}}, true, 200, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixtureOn(t, Options{}, productBundle())
			f.renderer.down.Store(tt.down)
			var err error
			rec := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				err = f.srv.Render(w, r, "product", tt.result)
			}), "/products/1")
			if rec.Code != tt.wantStatus {
				t.Fatalf("got %d, want %d", rec.Code, tt.wantStatus)
			}
			for _, h := range []string{"Cache-Status", "Vary"} {
				if rec.Header().Get(h) == "" {
					t.Errorf("no %s header: %v", h, rec.Header())
				}
			}
			if gotErr := errors.Is(err, ErrFallback); gotErr != tt.wantErr {
				t.Errorf("got error %v, want ErrFallback: %v", err, tt.wantErr)
			}
			if strings.Contains(f.logs.String(), "superfluous") {
				t.Errorf("logged: %s", f.logs.String())
			}
		})
	}
}
