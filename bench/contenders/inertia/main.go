// Command inertia-front is the Go side of make bench's Inertia contender, the way a Go team
// runs Inertia: its handlers read the page's props from the shop's catalog (the shop's own
// catalog package, on the same SQLite database), and petaki/inertia-go posts the page object
// to Inertia's Node SSR server (npm run build; start.sh) and writes the document around the
// {head, body} it answers. The client build's files are served from here too.
package main

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/klauspost/compress/gzhttp"
	inertia "github.com/petaki/inertia-go"

	"github.com/sidecar-ssr/sidecar-ssr/shop/catalog"
)

//go:embed templates/app.gohtml
var templates embed.FS

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "inertia-front:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("inertia-front", flag.ContinueOnError)
	listen := flags.String("listen", "127.0.0.1:18086", "HTTP address")
	dbPath := flags.String("db", "shop.db", "the shop's SQLite database (bin/shop -seed -db PATH makes one)")
	ssrURL := flags.String("ssr", "http://127.0.0.1:13714", "Inertia's SSR server")
	assets := flags.String("assets", "bench/contenders/inertia/dist/client", "the client build (vite build's outDir; the default is from the repository's root)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))

	db, err := catalog.Open(ctx, *dbPath)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer db.Close()
	client, version, err := clientBuild(*assets)
	if err != nil {
		return err
	}

	pages := inertia.NewWithFS("", "templates/app.gohtml", version, templates)
	pages.ShareViewData("script", client.script)
	pages.ShareViewData("css", client.css)
	// inertia-go's SSR client is an http.Client{} on http.DefaultTransport, which keeps two
	// idle connections per host and waits for an answer forever: with more requests in
	// flight than that, most renders would open a new connection to the SSR server.
	t := http.DefaultTransport.(*http.Transport)
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 512, 512
	t.ResponseHeaderTimeout = 10 * time.Second
	pages.EnableSsr(*ssrURL)

	mux := http.NewServeMux()
	files := http.FileServer(http.Dir(*assets))
	mux.Handle("GET /assets/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Vite's file names carry their content's hash.
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		files.ServeHTTP(w, r)
	}))
	render := func(w http.ResponseWriter, r *http.Request, status int, component string, props map[string]any) {
		if status != http.StatusOK {
			w = &statusWriter{ResponseWriter: w, status: status}
		}
		if err := pages.Render(w, r, component, props); err != nil {
			// Nothing is written before the SSR server answers, so the error can still be.
			log.ErrorContext(r.Context(), "render failed", "url", r.URL.RequestURI(), "component", component, "err", err)
			http.Error(w, "the page could not be rendered", http.StatusBadGateway)
		}
	}
	notFound := func(w http.ResponseWriter, r *http.Request) {
		render(w, r, http.StatusNotFound, "NotFound", map[string]any{})
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		page := catalog.ListingPage(r.URL.Query().Get("page"))
		products, err := db.Listing(r.Context(), page)
		if err != nil {
			catalogFailed(w, r, log, err)
			return
		}
		render(w, r, http.StatusOK, "Home", map[string]any{"page": page, "pageCount": catalog.PageCount, "products": products})
	})
	mux.HandleFunc("GET /products/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := catalog.ProductID(r.PathValue("id"))
		if !ok {
			notFound(w, r)
			return
		}
		product, related, err := db.Product(r.Context(), id)
		switch {
		case err != nil:
			catalogFailed(w, r, log, err)
		case product == nil:
			notFound(w, r)
		default:
			render(w, r, http.StatusOK, "Product", map[string]any{"product": product, "related": related})
		}
	})
	mux.HandleFunc("/", notFound)

	server := &http.Server{
		Addr:    *listen,
		Handler: gzhttp.GzipHandler(pages.Middleware(mux)),
		// Every response is bounded: a page waits for one SSR render, at most
		// ResponseHeaderTimeout above.
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- server.ListenAndServe() }()
	log.Info("serving", "listen", *listen, "ssr", *ssrURL, "assets", *assets, "version", version)
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	drain, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := server.Shutdown(drain); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func catalogFailed(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	log.ErrorContext(r.Context(), "catalog failed", "url", r.URL.RequestURI(), "err", err)
	http.Error(w, "the catalog is unavailable", http.StatusBadGateway)
}

// client is what the document needs of the client build: its entry's script and stylesheets.
type client struct {
	script string
	css    []string
}

// clientBuild reads Vite's manifest (build.manifest), as Vite's backend integration does;
// the version, Inertia's asset version, changes with it.
func clientBuild(dir string) (client, string, error) {
	const entry = "src/app.jsx"
	data, err := os.ReadFile(filepath.Join(dir, ".vite", "manifest.json"))
	if err != nil {
		return client{}, "", fmt.Errorf("client build (npm run build): %w", err)
	}
	var manifest map[string]struct {
		File string   `json:"file"`
		CSS  []string `json:"css"`
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		return client{}, "", fmt.Errorf("client build: %w", err)
	}
	chunk, ok := manifest[entry]
	if !ok {
		return client{}, "", fmt.Errorf("client build: the manifest has no %s", entry)
	}
	c := client{script: "/" + chunk.File}
	for _, css := range chunk.CSS {
		c.css = append(c.css, "/"+css)
	}
	sum := sha256.Sum256(data)
	return c, hex.EncodeToString(sum[:8]), nil
}

// statusWriter sends status instead of inertia-go's implicit 200 (Render has no status of
// its own): with the headers Render set, when it writes the document.
type statusWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.wroteHeader = true
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.WriteHeader(w.status)
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
