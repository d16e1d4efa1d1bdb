// Package middleware is what every response of the edge goes through, on any router: a
// request id, a logged 500 instead of a dropped connection on a bug, and a span when
// tracing is on. Each is a func(http.Handler) http.Handler.
package middleware
