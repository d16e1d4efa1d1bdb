// Command shop is the demo shop as a Go shop writes it: its catalog in its own database
// (SQLite), its own router and handlers, and React pages rendered by the sidecar-ssr
// renderer with props computed in Go (package github.com/sidecar-ssr/sidecar-ssr/edge/ssr).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
	"github.com/sidecar-ssr/sidecar-ssr/shop/catalog"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "shop:", err)
		os.Exit(1)
	}
}

// run serves the shop until ctx is done, then drains.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	flags := flag.NewFlagSet("shop", flag.ContinueOnError)
	listen := flags.String("listen", ":8080", "public HTTP address")
	adminListen := flags.String("admin-listen", "127.0.0.1:9100", "health and metrics (keep it off the public network)")
	dbPath := flags.String("db", "shop.db", "SQLite database; created and seeded with the catalog on first run")
	renderer := flags.String("renderer", getenv("SSR_RENDERER_GRPC_ADDRESS"), "the renderer's gRPC address (default: unix:///tmp/sidecar-ssr/renderer.sock)")
	assets := flags.String("assets", "", "the app's client build (default: app/dist/client)")
	seedOnly := flags.Bool("seed", false, "create and seed the database at -db, then exit")
	renderTimeout := flags.Duration("render-timeout", 0, "how long a request waits for its page before the browser renders it (default: 150ms)")
	streamTimeout := flags.Duration("stream-timeout", 0, "how long a streamed page's Suspense boundaries may stay pending, from the request's arrival, before the browser renders them (default: 1s, held within -render-timeout and -hard-timeout)")
	hardTimeout := flags.Duration("hard-timeout", 0, "how long a render may go on, after -render-timeout, to fill the cache (default: 2s; at least -render-timeout)")
	reviewsDelay := flags.Duration("reviews-delay", 300*time.Millisecond, "how long the reviews service takes (the product page's deferred reviews)")
	reviewsURL := flags.String("reviews-url", "", "if set, the reviews service: the reviews of product N are ready once GET <url>?product=N answers (instead of -reviews-delay)")
	failIsland := flags.Bool("fail-island", false, "the about page's Flaky island throws on the server, so that the browser renders it while the other islands are server-rendered")
	csp := flags.Bool("csp", false, "send a strict Content-Security-Policy with a nonce per response, which every script of the pages carries (a hit then costs a compression)")
	adminToken := flags.String("admin-token", getenv("SSR_ADMIN_TOKEN"), "the bearer token purges and profiles on the admin listener need (default: $SSR_ADMIN_TOKEN; empty: they are closed, whatever the caller's address)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stdout, nil))

	db, err := catalog.Open(ctx, *dbPath)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer db.Close()
	if *seedOnly {
		return nil
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	o := ssr.Options{
		RendererAddress: *renderer, AssetsDir: *assets, Registerer: registry, Logger: log, AdminToken: *adminToken,
		Timeouts: ssr.Timeouts{Render: *renderTimeout, Stream: *streamTimeout, Hard: *hardTimeout},
		// The shop's own pages (about.go) go out compressed as its React pages do.
		CompressHTML: true,
	}
	if *csp {
		o.Nonce = func(r *http.Request) string { return nonceFrom(r.Context()) }
	}
	pages, err := ssr.New(o)
	if err != nil {
		return err
	}
	defer pages.Close()
	handler := pages.Wrap(routes(pages, log, db, reviewsService{delay: *reviewsDelay, url: *reviewsURL}, *failIsland))
	if *csp {
		handler = withCSP(handler)
	}
	// Health, readiness (draining, a page name the bundle lacks) and metrics for anyone who
	// reaches the admin listener (loopback by default); purges and profiles for the token's
	// bearers only: no address is trusted, loopback included (in a pod it is shared).
	// The shop's own timeouts: it has no long response (no server-sent events, no download),
	// so every request is bounded, not only the pages.
	public := &http.Server{Addr: *listen, Handler: handler, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	return pages.ListenAndServe(ctx, public, ssr.ServeOptions{AdminAddr: *adminListen})
}

// routes are the shop's pages: the listing and the product pages read the catalog in Go
// and hand it to the React pages as props; the about page is a Go template with islands.
func routes(pages *ssr.Server, log *slog.Logger, db *catalog.Store, reviews reviewsService, failIsland bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /assets/", pages.Assets())
	loadListing := func(r *http.Request) (catalog.ListingProps, ssr.Result, error) {
		page := catalog.ListingPage(r.URL.Query().Get("page"))
		products, err := db.Listing(r.Context(), page)
		return catalog.ListingProps{Page: page, PageCount: catalog.PageCount, Products: products}, ssr.Result{}, err
	}
	loadProduct := func(r *http.Request) (productProps, ssr.Result, error) {
		id, ok := catalog.ProductID(r.PathValue("id"))
		if !ok {
			return productProps{}, ssr.Result{NotFound: true}, nil
		}
		product, related, err := db.Product(r.Context(), id)
		if err != nil || product == nil {
			return productProps{}, ssr.Result{NotFound: product == nil}, err
		}
		// Tagged: a change to the product purges every page that shows it, shells included.
		return productProps{Product: *product, Related: related}, ssr.Result{Tags: []string{"product:" + strconv.Itoa(id)}}, nil
	}
	apiRoutes(mux, log, loadListing, loadProduct, reviews)
	mux.Handle("GET /{$}", pages.Page("home", ssr.PageOptions{
		Route: "GET /{$}",
		Cache: ssr.CachePolicy{TTL: time.Minute, StaleWhileRevalidate: time.Minute, StaleIfError: 10 * time.Minute, Query: []string{"page"}},
		Load:  ssr.Typed(loadListing),
	}))
	productCache := ssr.CachePolicy{TTL: 5 * time.Minute, StaleWhileRevalidate: 5 * time.Minute, StaleIfError: time.Hour, Query: []string{}}
	mux.Handle("GET /products/{id}", pages.Page("product", ssr.PageOptions{
		Route: "GET /products/{id}", Cache: productCache, Load: ssr.Typed(loadProduct),
	}))
	// The product page with its reviews and the visitor's cart line, partially prerendered:
	// the product, from the database, is rendered once and cached; each request gets it at
	// once, then, in the same response, its own cart line (from its session) and the
	// reviews (from a slower service), each in a Suspense boundary of its own. A request
	// that bypasses the cache (Authorization) renders the page whole, streamed.
	mux.Handle("GET /products/{id}/reviews", pages.Page("product-reviews", ssr.PageOptions{
		Route: "GET /products/{id}/reviews", Cache: productCache, Load: ssr.Typed(loadProduct),
		PerRequest: map[string]ssr.RequestValue{
			"cart": ssr.FromRequest(cartLineOf),
			"reviews": ssr.FromRequest(func(r *http.Request) ([]catalog.Review, error) {
				id, _ := catalog.ProductID(r.PathValue("id"))
				return reviews.of(r.Context(), id)
			}),
		},
	}))
	// The shop's own template, with React islands in it.
	mux.Handle("GET /about", newAboutPage(pages, db, failIsland))
	mux.Handle("GET /", pages.NotFound())
	return mux
}

// The pages' props types, for the React app, from the Go types the routes register them with
// (ssr.Typed): run go generate (make types) after changing one; make test fails until then.
//go:generate go tool ssr-types -ts ../app/src/props.gen.d.ts -schema ../app/src/props.gen.schema.json

// productProps are the product page's props (app/src/pages/Product.jsx).
type productProps struct {
	Product catalog.Product   `json:"product"`
	Related []catalog.Product `json:"related"`
}

// reviewsService stands for the shop's reviews service: slower than its database.
type reviewsService struct {
	delay time.Duration
	// url, if not empty, answers when the reviews are ready: the tests hold it back to show
	// the page's shell arriving first.
	url string
}

func (s reviewsService) of(ctx context.Context, id int) ([]catalog.Review, error) {
	if s.url == "" {
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return catalog.Reviews(id), nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"?product="+strconv.Itoa(id), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reviews service: %s", resp.Status)
	}
	return catalog.Reviews(id), nil
}
