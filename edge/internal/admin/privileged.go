package admin

import (
	"crypto/subtle"
	"net/http"
)

// privileged admits callers with "Authorization: Bearer <token>" when a token is configured,
// and no one else. Profiles and purges must not be reachable by
// whoever can reach the admin port from inside the cluster, nor, in a pod, by the renderer's
// app code, which shares the pod's loopback.
func privileged(token string) func(http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) == 1 {
				next.ServeHTTP(w, r)
				return
			}
			if token == "" {
				http.Error(w, "forbidden: no admin token is set (ssr.Options.AdminToken; the edge binary's edge.admin_token, SSR_EDGE_ADMIN_TOKEN): set one and send it as a bearer token", http.StatusForbidden)
				return
			}
			http.Error(w, "forbidden: admin token required", http.StatusForbidden)
		})
	}
}
