package ssr_test

import (
	"log"
	"net/http"
	"strconv"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

// CartLine is a visitor's line for one product, from their session.
type CartLine struct {
	Quantity int `json:"quantity"`
}

// A product page with the visitor's cart line, partially prerendered: the product, the
// same for everyone, is rendered once and cached; each request gets it at once, then its
// own cart line, in the Suspense boundary where the page reads `use(deferred.cart)`. The
// line is computed from the request itself on every request, and never stored.
func ExampleRequestValue() {
	pages, err := ssr.New(ssr.Options{})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("GET /products/{id}", pages.Page("product", ssr.PageOptions{
		Cache: ssr.CachePolicy{TTL: 5 * time.Minute, Query: []string{}},
		Load: func(r *http.Request) (ssr.Result, error) {
			// Shared: no cookie reaches a cached page's loader.
			id, err := strconv.Atoi(r.PathValue("id"))
			if err != nil {
				return ssr.Result{NotFound: true}, nil
			}
			return ssr.Result{Props: map[string]int{"id": id}, Tags: []string{"product:" + strconv.Itoa(id)}}, nil
		},
		PerRequest: map[string]ssr.RequestValue{
			// ssr.FromRequest keeps the value's type for ssr-types, as ssr.Defer does.
			"cart": ssr.FromRequest(func(r *http.Request) (CartLine, error) {
				c, err := r.Cookie("cart_" + r.PathValue("id"))
				if err != nil {
					return CartLine{}, nil
				}
				n, _ := strconv.Atoi(c.Value)
				return CartLine{Quantity: n}, nil
			}),
		},
	}))
}
