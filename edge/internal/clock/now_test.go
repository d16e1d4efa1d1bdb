//go:build !testclock

package clock

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestNoTestClock: a build without the tag testclock (every build but the e2e tests' edge)
// keeps real time and offers no way to move it.
func TestNoTestClock(t *testing.T) {
	before := time.Now()
	if now := Now(); now.Before(before) || now.Sub(before) > time.Second {
		t.Errorf("Now() = %v, time.Now() = %v: want real time", now, before)
	}
	mux := http.NewServeMux()
	Mount(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("POST", "/testclock/advance?by=1h", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("POST /testclock/advance: got %d, want 404", rec.Code)
	}
}
