package middleware

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"regexp"
)

type requestIDKey struct{}

// RequestID returns the request's id, set by WithRequestID.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// WithID is ctx carrying the request id id: for work that leaves the request's own
// context behind (a render shared by many) yet logs under its id.
func WithID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

var saneRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// WithRequestID keeps a caller's X-Request-Id when it is sane, or makes one, and echoes it.
// Nested (a page inside the edge's mux), the outer one decides.
func WithRequestID(next http.Handler) http.Handler {
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
		next.ServeHTTP(w, r.WithContext(WithID(r.Context(), id)))
	})
}
