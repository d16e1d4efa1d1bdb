package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"regexp"
)

type requestIDKey struct{}

// RequestID returns the request's id, set by withRequestID.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

var saneRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// withRequestID keeps a caller's X-Request-Id when it is sane, or makes one, and echoes it.
// Nested (a page inside the edge's mux), the outer one decides.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if RequestID(r.Context()) != "" {
			next.ServeHTTP(w, r)
			return
		}
		id := r.Header.Get("X-Request-Id")
		if !saneRequestID.MatchString(id) {
			var b [8]byte
			rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// withRecover turns a panic in the edge itself into a logged 500 instead of a dropped
// connection.
func withRecover(log *slog.Logger) func(http.Handler) http.Handler {
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

// privileged admits callers with "Authorization: Bearer <token>" when a token is configured,
// and loopback callers when trustLoopback. Profiles and purges must not be reachable by
// whoever can reach the admin port from inside the cluster, nor, in a pod, by the renderer's
// app code, which shares the pod's loopback.
func privileged(token string, trustLoopback bool) func(http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			host, _, _ := net.SplitHostPort(r.RemoteAddr)
			if ip := net.ParseIP(host); trustLoopback && ip != nil && ip.IsLoopback() {
				next.ServeHTTP(w, r)
				return
			}
			if token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) == 1 {
				next.ServeHTTP(w, r)
				return
			}
			if token == "" {
				http.Error(w, "forbidden: set edge.admin_token (SSR_EDGE_ADMIN_TOKEN) and send it as a bearer token", http.StatusForbidden)
				return
			}
			http.Error(w, "forbidden: admin token required", http.StatusForbidden)
		})
	}
}
