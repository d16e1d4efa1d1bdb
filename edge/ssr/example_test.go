package ssr_test

import (
	"context"
	"database/sql"
	"errors"
	"log"
	"net/http"
	"strconv"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

var db *sql.DB // the shop's own database

type Product struct {
	ID         int    `json:"id"`
	Name       string `json:"name"`
	PriceCents int    `json:"priceCents"`
}

// A shop's server: its router, its database, React pages rendered by the sidecar.
func Example() {
	pages, err := ssr.New(ssr.Options{}) // the renderer on /tmp/sidecar-ssr/renderer.sock
	if err != nil {
		log.Fatal(err)
	}
	defer pages.Close()

	mux := http.NewServeMux()
	mux.Handle("GET /products/{id}", pages.Page("product", ssr.PageOptions{
		Cache: ssr.CachePolicy{TTL: 5 * time.Minute, StaleWhileRevalidate: 5 * time.Minute, StaleIfError: time.Hour, Query: []string{}},
		// Runs on a miss, once for every request waiting on it; never on a hit.
		Load: func(r *http.Request) (ssr.Result, error) {
			id, err := strconv.Atoi(r.PathValue("id"))
			if err != nil {
				return ssr.Result{NotFound: true}, nil
			}
			var p Product
			err = db.QueryRowContext(r.Context(), "SELECT id, name, price_cents FROM products WHERE id = ?", id).
				Scan(&p.ID, &p.Name, &p.PriceCents)
			if err == sql.ErrNoRows {
				return ssr.Result{NotFound: true}, nil
			}
			return ssr.Result{Props: p}, err
		},
	}))
	mux.Handle("GET /assets/", pages.Assets())
	mux.Handle("GET /", pages.NotFound())

	// A page name the renderer's bundle lacks stops the start, not every request.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pages.Check(ctx); err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.ListenAndServe(":8080", pages.Wrap(mux)))
}

// Render one page from a handler the shop already has: uncached, with the same deadline
// and fallbacks as any page.
func ExampleServer_Render() {
	pages, err := ssr.New(ssr.Options{})
	if err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("GET /account", func(w http.ResponseWriter, r *http.Request) {
		user := r.Header.Get("X-User") // the shop's own auth
		status := http.StatusOK
		if user == "" {
			status = http.StatusUnauthorized // the status goes in the Result, never w.WriteHeader
		}
		err := pages.Render(w, r, "account", ssr.Result{Props: map[string]string{"user": user}, Status: status})
		if err != nil {
			log.Print(err) // the response is written: the client-side-render document
		}
	})
}

// Purge the pages a change makes stale, here after a product update.
func ExampleServer_Purge() {
	pages, err := ssr.New(ssr.Options{})
	if err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("POST /admin/products/{id}", func(w http.ResponseWriter, r *http.Request) {
		// ... update the product in the database ...
		_, errProduct := pages.Purge(r.Context(), ssr.ByPath("/products/"+r.PathValue("id")))
		_, errHome := pages.Purge(r.Context(), ssr.ByPath("/"))
		if err := errors.Join(errProduct, errHome); err != nil {
			// Purged here; the shared cache's store is purged once it answers again, and
			// meanwhile no replica serves its copies of these pages.
			log.Print(err)
		}
	})
}
