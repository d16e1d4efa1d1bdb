package ssr_test

import (
	"bytes"
	"html/template"
	"log"
	"net/http"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

// A page the shop writes itself, with React islands in it: behind Wrap, both rendered in one
// call to the renderer, the featured products stored for everyone, the cart rendered for
// each visitor. The template is executed into a buffer first, so that an error in it is
// answered with nothing of the page written.
func ExampleServer_Wrap() {
	pages, err := ssr.New(ssr.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer pages.Close()
	pages.Island("FeaturedProducts", time.Minute)
	pages.Island("CartSummary", 0)

	about := template.Must(template.New("about").Funcs(ssr.IslandFuncs()).Parse(`<!doctype html>
<html><head><title>About us</title></head>
<body><h1>About us</h1>
{{ island "FeaturedProducts" .Featured }}
{{ island "CartSummary" .Cart }}
</body></html>`))

	mux := http.NewServeMux()
	mux.HandleFunc("GET /about", func(w http.ResponseWriter, r *http.Request) {
		data := map[string]any{
			"Featured": map[string]any{"products": []Product{{ID: 1, Name: "Mug", PriceCents: 1200}}},
			"Cart":     map[string]any{"user": "ann", "items": 2},
		}
		var page bytes.Buffer
		if err := about.Execute(&page, data); err != nil {
			http.Error(w, "the page could not be written", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		page.WriteTo(w) // through Wrap: its islands rendered
	})
	mux.Handle("GET /assets/", pages.Assets())
	log.Fatal(http.ListenAndServe(":8080", pages.Wrap(mux)))
}
