// Package pages registers pages as a shop does, for find_test.go.
package pages

import (
	"net/http"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

type ProductProps struct {
	Name string `json:"name"`
}

type listing struct {
	Page int `json:"page"`
}

const home = "home"

func routes(pages *ssr.Server, mux *http.ServeMux) {
	mux.Handle("GET /{$}", pages.Page(home, ssr.PageOptions{
		Load: ssr.Typed(func(*http.Request) (listing, ssr.Result, error) { return listing{Page: 1}, ssr.Result{}, nil }),
	}))
	mux.Handle("GET /products/{id}", pages.Page("product", ssr.PageOptions{Route: "GET /products/{id}", Load: ssr.Typed[ProductProps](loadProduct)}))
	mux.Handle("GET /p/{id}", pages.Page("product", ssr.PageOptions{Route: "GET /p/{id}", Load: (ssr.Typed(loadProduct))}))
	mux.Handle("GET /about", pages.Page("about", ssr.PageOptions{
		Load: func(*http.Request) (ssr.Result, error) { return ssr.Result{Props: map[string]int{}}, nil },
	}))
}

func loadProduct(*http.Request) (ProductProps, ssr.Result, error) {
	return ProductProps{}, ssr.Result{}, nil
}
