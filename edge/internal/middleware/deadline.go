package middleware

import (
	"net/http"
	"time"
)

// WriteDeadline bounds the writing of a response by d from its start when the server it
// runs on has no WriteTimeout of its own (net/http's zero): a client that stops reading
// then holds a page's buffers and goroutine for d, not for ever, while the shop's other
// handlers on that server (server-sent events, downloads) keep the unbounded writes it chose
// for them. A server with a WriteTimeout, or an explicit none (negative), is left as it is.
// net/http does not reset a connection's write deadline between requests when the server
// has no WriteTimeout, so the handler clears it once done: the next request on the
// connection starts unbounded.
func WriteDeadline(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && srv.WriteTimeout == 0 {
				rc := http.NewResponseController(w)
				if rc.SetWriteDeadline(time.Now().Add(d)) == nil {
					defer rc.SetWriteDeadline(time.Time{})
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}
