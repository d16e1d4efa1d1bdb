package ssr_test

import (
	"database/sql"
	"log"
	"net/http"
	"strconv"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

// ProductPage is the product page's props: the one declaration both sides use.
type ProductPage struct {
	Product Product   `json:"product"`
	Related []Product `json:"related,omitempty"`
}

// A page whose props have a Go type. `go tool ssr-types` writes it for the app as
//
//	export interface ProductPage {
//	  product: Product;
//	  related?: Product[];
//	}
//
// and the page's component declares `@param {import('./props.gen.js').ProductPage} props`:
// a field renamed here fails the app's typecheck where the page reads it.
func ExampleTyped() {
	pages, err := ssr.New(ssr.Options{})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("GET /products/{id}", pages.Page("product", ssr.PageOptions{
		Cache: ssr.CachePolicy{TTL: 5 * time.Minute, Query: []string{}},
		Load: ssr.Typed(func(r *http.Request) (ProductPage, ssr.Result, error) {
			id, err := strconv.Atoi(r.PathValue("id"))
			if err != nil {
				return ProductPage{}, ssr.Result{NotFound: true}, nil
			}
			var p ProductPage
			err = db.QueryRowContext(r.Context(), "SELECT id, name, price_cents FROM products WHERE id = ?", id).
				Scan(&p.Product.ID, &p.Product.Name, &p.Product.PriceCents)
			if err == sql.ErrNoRows {
				return ProductPage{}, ssr.Result{NotFound: true}, nil
			}
			return p, ssr.Result{Tags: []string{"product:" + strconv.Itoa(id)}}, err
		}),
	}))
}
