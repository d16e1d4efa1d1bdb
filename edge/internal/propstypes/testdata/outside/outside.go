// Package outside declares a typed loader apart from its page, for find_test.go.
package outside

import (
	"net/http"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

type props struct {
	Name string `json:"name"`
}

var load = ssr.Typed(func(*http.Request) (props, ssr.Result, error) { return props{}, ssr.Result{}, nil })

func routes(pages *ssr.Server) http.Handler {
	return pages.Page("product", ssr.PageOptions{Load: load})
}
