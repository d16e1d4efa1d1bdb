package main

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
	"github.com/sidecar-ssr/sidecar-ssr/shop/catalog"
)

//go:embed templates
var templates embed.FS

// aboutPage is the shop's own html/template page with three React islands, rendered by
// pages.Wrap around the shop's handler: the featured products, the same for everyone
// (stored for a minute); the visitor's cart, read from their session on
// every request; and one that fails on the server when failIsland is set, which the
// browser then renders.
type aboutPage struct {
	db         *catalog.Store
	failIsland bool
	page       *template.Template
}

func newAboutPage(pages *ssr.Server, db *catalog.Store, failIsland bool) *aboutPage {
	// Typed: ssr-types writes their props into app/src/props.gen.d.ts (IslandProps).
	ssr.TypedIsland[featuredProps](pages, "FeaturedProducts", time.Minute)
	ssr.TypedIsland[cartProps](pages, "CartSummary", 0)
	pages.Island("Flaky", 0)
	page := template.Must(template.New("about.html").Funcs(ssr.IslandFuncs()).ParseFS(templates, "templates/about.html"))
	return &aboutPage{db: db, failIsland: failIsland, page: page}
}

// featured is a product as the FeaturedProducts island shows it.
type featured struct {
	ID    int    `json:"id"`
	Name  string `json:"name"`
	Price string `json:"price"`
}

// featuredProps are the FeaturedProducts island's props; cartProps the CartSummary's.
type (
	featuredProps struct {
		Products []featured `json:"products"`
	}
	cartProps struct {
		User  string `json:"user"`
		Items int    `json:"items"`
	}
)

func (a *aboutPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	products, err := a.db.Listing(r.Context(), 1)
	if err != nil {
		http.Error(w, "the catalog is unavailable", http.StatusServiceUnavailable)
		return
	}
	var top []featured
	for _, p := range products[:min(3, len(products))] {
		top = append(top, featured{ID: p.ID, Name: p.Name, Price: fmt.Sprintf("%d.%02d %s", p.PriceCents/100, p.PriceCents%100, p.Currency)})
	}
	user, items := session(r)
	data := map[string]any{
		"Shop":     "The Demo Shop",
		"Featured": featuredProps{Products: top},
		"Cart":     cartProps{User: user, Items: items},
		"Flaky":    map[string]any{"fail": a.failIsland, "note": "Hand-made in small batches."},
	}
	// Executed into a buffer first: an error in the template is answered with nothing of
	// the page written.
	var page bytes.Buffer
	if err := a.page.Execute(&page, data); err != nil {
		http.Error(w, "the page could not be written", http.StatusInternalServerError)
		return
	}
	// A page that shows a visitor's cart is theirs: no shared cache may keep it.
	w.Header().Set("Cache-Control", "private, no-store")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	page.WriteTo(w) // through pages.Wrap (main.go), which renders its islands
}

// session is the demo's stand-in for a session store: the visitor's name and cart size from
// their cookies.
func session(r *http.Request) (user string, items int) {
	user = "guest"
	if c, err := r.Cookie("user"); err == nil && c.Value != "" {
		user = c.Value
	}
	if c, err := r.Cookie("cart"); err == nil {
		items, _ = strconv.Atoi(c.Value)
	}
	return user, max(0, items)
}
