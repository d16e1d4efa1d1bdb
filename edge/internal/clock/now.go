//go:build !testclock

package clock

import (
	"net/http"
	"time"
)

// Now is time.Now.
func Now() time.Time { return time.Now() }

// Mount adds nothing to the admin mux: only a testclock build can move the clock.
func Mount(*http.ServeMux) {}
