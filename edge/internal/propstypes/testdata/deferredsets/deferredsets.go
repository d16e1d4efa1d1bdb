// Package deferredsets registers one page twice, deferring different values, for
// find_test.go.
package deferredsets

import (
	"context"
	"net/http"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

type props struct{}

func routes(pages *ssr.Server, mux *http.ServeMux) {
	mux.Handle("GET /a", pages.Page("product", ssr.PageOptions{
		Load: ssr.Typed(func(*http.Request) (props, ssr.Result, error) { return props{}, ssr.Result{}, nil }),
	}))
	mux.Handle("GET /b", pages.Page("product", ssr.PageOptions{
		Load: ssr.Typed(func(*http.Request) (props, ssr.Result, error) {
			return props{}, ssr.Result{Deferred: map[string]ssr.Deferred{
				"reviews": ssr.Defer(func(context.Context) (int, error) { return 1, nil }),
			}}, nil
		}),
	}))
}
