// Package dynamicdeferred names a typed page's deferred value at run time, for find_test.go.
package dynamicdeferred

import (
	"context"
	"net/http"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

type props struct{}

func register(pages *ssr.Server, name string) http.Handler {
	return pages.Page("product", ssr.PageOptions{
		Load: ssr.Typed(func(*http.Request) (props, ssr.Result, error) {
			return props{}, ssr.Result{Deferred: map[string]ssr.Deferred{
				name: ssr.Defer(func(context.Context) (int, error) { return 1, nil }),
			}}, nil
		}),
	})
}
