// Package deferredtypes gives one deferred value two types in one loader, for find_test.go.
package deferredtypes

import (
	"context"
	"net/http"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

type props struct{}

func register(pages *ssr.Server) http.Handler {
	return pages.Page("product", ssr.PageOptions{
		Load: ssr.Typed(func(r *http.Request) (props, ssr.Result, error) {
			if r.URL.Query().Has("count") {
				return props{}, ssr.Result{Deferred: map[string]ssr.Deferred{
					"reviews": ssr.Defer(func(context.Context) (int, error) { return 1, nil }),
				}}, nil
			}
			return props{}, ssr.Result{Deferred: map[string]ssr.Deferred{
				"reviews": ssr.Defer(func(context.Context) ([]string, error) { return nil, nil }),
			}}, nil
		}),
	})
}
