package ssr

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestLoadErrorStatusAndErrorPage: a loader's failure answers the status it chose, with the
// page's document without props and with that status, which the app's client renders as
// its errorPage.
func TestLoadErrorStatusAndErrorPage(t *testing.T) {
	dbDown := errors.New("db: connection refused")
	tests := []struct {
		name       string
		err        error
		wantStatus int
		wantData   string
	}{
		{"plain error", dbDown, 503, `{"page":"product","url":"/products/7","params":{"id":"7"},"status":503}`},
		{"bad gateway", &LoadError{Status: 502, Err: dbDown}, 502, `{"page":"product","url":"/products/7","params":{"id":"7"},"status":502}`},
		{"not a server error status", &LoadError{Status: 200, Err: dbDown}, 503, `"status":503}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			rec := serve(f.srv.Page("product", PageOptions{Load: func(*http.Request) (Result, error) { return Result{}, tt.err }}), "/products/7")
			if rec.Code != tt.wantStatus || rec.Header().Get("X-SSR-Fallback") != "load-error" {
				t.Fatalf("got %d %q, want %d load-error", rec.Code, rec.Header().Get("X-SSR-Fallback"), tt.wantStatus)
			}
			if data := hydrationData(rec.Body.String()); !strings.Contains(data, tt.wantData) {
				t.Errorf("got hydration data %s, want %s", data, tt.wantData)
			}
			if !strings.Contains(f.logs.String(), "connection refused") {
				t.Errorf("the loader's error is not logged:\n%s", f.logs.String())
			}
		})
	}
}
