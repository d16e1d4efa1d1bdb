package admin

import (
	"crypto/subtle"
	"net"
	"net/http"
)

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
				http.Error(w, "forbidden: no admin token is set (ssr.AdminOptions.Token; the edge binary's edge.admin_token, SSR_EDGE_ADMIN_TOKEN): set one and send it as a bearer token", http.StatusForbidden)
				return
			}
			http.Error(w, "forbidden: admin token required", http.StatusForbidden)
		})
	}
}
