// Package deferred registers pages whose loaders defer values, for find_test.go.
package deferred

import (
	"context"
	"net/http"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

// Review is in both a page's props and its deferred value: declared once.
type Review struct {
	Author string `json:"author"`
	Stars  int    `json:"stars"`
}

type productProps struct {
	Name string `json:"name"`
	Top  Review `json:"top"`
}

// moreReviews is only ever deferred: it is not in the props' JSON Schema.
type moreReviews struct {
	Count int `json:"count"`
}

// cartLine is a value per request only.
type cartLine struct {
	Quantity int `json:"quantity"`
}

type listing struct {
	Page int `json:"page"`
}

const reviews = "reviews"

func routes(pages *ssr.Server, mux *http.ServeMux, names func() string) {
	mux.Handle("GET /products/{id}/reviews", pages.Page("product-reviews", ssr.PageOptions{
		Load: ssr.Typed(func(r *http.Request) (productProps, ssr.Result, error) {
			res := ssr.Result{Deferred: map[string]ssr.Deferred{
				reviews:   ssr.Defer(reviewsOf),
				"stock":   ssr.Defer[int](func(context.Context) (int, error) { return 3, nil }),
				"legacy":  func(context.Context) (any, error) { return 1, nil },
				"related": related,
			}}
			if r.URL.Query().Has("more") {
				res.Deferred = map[string]ssr.Deferred{reviews: ssr.Defer(reviewsOf), "more": ssr.Defer(moreOf)}
			}
			return productProps{}, res, nil
		}),
	}))
	mux.Handle("GET /{$}", pages.Page("home", ssr.PageOptions{
		Load: ssr.Typed(func(*http.Request) (listing, ssr.Result, error) { return listing{}, ssr.Result{}, nil }),
		// Partially prerendered: its values per request are typed as deferred ones are.
		PerRequest: map[string]ssr.RequestValue{
			"cart":  ssr.FromRequest(func(*http.Request) (cartLine, error) { return cartLine{}, nil }),
			"plain": func(*http.Request) (any, error) { return nil, nil },
		},
	}))
	// Not typed: its values are not looked at, so a name chosen at run time is no error.
	mux.Handle("GET /about", pages.Page("about", ssr.PageOptions{
		Load: func(*http.Request) (ssr.Result, error) {
			return ssr.Result{Props: map[string]int{}, Deferred: map[string]ssr.Deferred{names(): related}}, nil
		},
	}))
}

func reviewsOf(context.Context) ([]Review, error) { return nil, nil }

func moreOf(context.Context) (*moreReviews, error) { return nil, nil }

var related ssr.Deferred = func(context.Context) (any, error) { return nil, nil }
