//go:build testclock

package clock

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"time"
)

// offset is how far the tests have moved the clock past time.Now, in nanoseconds.
var offset atomic.Int64

// Now is time.Now plus what the tests have added. Between moves it runs as time.Now does,
// so ages and remaining TTLs keep moving as in production.
func Now() time.Time { return time.Now().Add(time.Duration(offset.Load())) }

// Mount adds POST /testclock/advance?by=<duration> to the admin mux. It answers once the
// clock has moved, so the next request sees the new time.
func Mount(mux *http.ServeMux) {
	mux.HandleFunc("POST /testclock/advance", func(w http.ResponseWriter, r *http.Request) {
		by, err := time.ParseDuration(r.URL.Query().Get("by"))
		if err != nil || by <= 0 {
			http.Error(w, "testclock: ?by= wants a positive duration, such as 90s", http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "{\"offset\":%q}\n", time.Duration(offset.Add(int64(by))))
	})
}
