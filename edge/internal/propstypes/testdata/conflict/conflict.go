// Package conflict gives one page two props types, for find_test.go.
package conflict

import (
	"net/http"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

type a struct{}

type b struct{}

func routes(pages *ssr.Server, mux *http.ServeMux) {
	mux.Handle("GET /a", pages.Page("product", ssr.PageOptions{
		Load: ssr.Typed(func(*http.Request) (a, ssr.Result, error) { return a{}, ssr.Result{}, nil }),
	}))
	mux.Handle("GET /b", pages.Page("product", ssr.PageOptions{
		Load: ssr.Typed(func(*http.Request) (b, ssr.Result, error) { return b{}, ssr.Result{}, nil }),
	}))
}
