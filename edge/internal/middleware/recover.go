package middleware

import (
	"log/slog"
	"net/http"
)

// Recover turns a panic in the edge itself into a logged 500 instead of a dropped
// connection.
func Recover(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						panic(v)
					}
					log.Error("edge bug: handler panicked", "panic", v, "path", r.URL.Path, "request_id", RequestID(r.Context()))
					http.Error(w, "internal server error", http.StatusInternalServerError)
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}
