// Package dynamic names a typed page at run time, for find_test.go.
package dynamic

import (
	"net/http"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

type props struct{}

func register(pages *ssr.Server, name string) http.Handler {
	return pages.Page(name, ssr.PageOptions{
		Load: ssr.Typed(func(*http.Request) (props, ssr.Result, error) { return props{}, ssr.Result{}, nil }),
	})
}
