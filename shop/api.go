package main

import (
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
	"github.com/sidecar-ssr/sidecar-ssr/shop/catalog"
)

// apiRoutes serve the catalog as JSON, as a Go team's API serves it to a front end of
// another kind (a Next.js or React Router server, an Inertia-style one: make bench's
// contenders): the React pages' own loaders, so that what a page gets here is what the
// shop's pages render with, and the reviews after the same service's delay.
func apiRoutes(mux *http.ServeMux, log *slog.Logger, loadListing func(*http.Request) (catalog.ListingProps, ssr.Result, error),
	loadProduct func(*http.Request) (productProps, ssr.Result, error), reviews reviewsService) {
	mux.Handle("GET /api/listing", apiHandler(log, loadListing))
	mux.Handle("GET /api/products/{id}", apiHandler(log, loadProduct))
	mux.Handle("GET /api/products/{id}/reviews", apiHandler(log, func(r *http.Request) ([]catalog.Review, ssr.Result, error) {
		id, ok := catalog.ProductID(r.PathValue("id"))
		if !ok {
			return nil, ssr.Result{NotFound: true}, nil
		}
		list, err := reviews.of(r.Context(), id)
		return list, ssr.Result{}, err
	}))
}

// apiHandler answers with load's value as JSON; 404 when it says NotFound, 502 when it
// fails (logged, not shown).
func apiHandler[P any](log *slog.Logger, load func(*http.Request) (P, ssr.Result, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, res, err := load(r)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		switch {
		case err != nil:
			log.ErrorContext(r.Context(), "api: load failed", "url", r.URL.RequestURI(), "err", err)
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte(`{"error":"the catalog is unavailable"}` + "\n"))
		case res.NotFound:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"not found"}` + "\n"))
		default:
			json.NewEncoder(w).Encode(v)
		}
	}
}
