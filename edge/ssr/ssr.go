// Package ssr renders React pages for a Go server through the sidecar-ssr renderer: a Node
// process beside it that renders in a pool of worker threads, reached over gRPC on a unix
// socket.
//
// A [Server] gives the shop's own router http.Handlers: [Server.Page] for a page whose
// props a Go [Loader] computes (the shop's database, its services), cached, coalesced and
// held to a deadline; [Server.Render] for a one-off render inside an existing handler;
// [Server.NotFound] and [Server.Assets] for the rest of the app. When the renderer is late,
// down or overloaded, a page still answers: with its stale copy, or with the document
// whose root the browser renders itself.
//
// [Server.Wrap] is middleware for the shop's whole handler, on any router: it renders the
// React islands that the shop's own html/template pages mark ([IslandFuncs]), however they
// are written. [Server.ListenAndServe] serves the shop's http.Server beside the
// [Server.Admin] handler, and drains on SIGTERM.
//
// The edge binary (cmd/edge) is a client of this package: its config file's keys set these
// options, and its routes are mounted with Page.
package ssr

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/admin"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/renderclient"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/server"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache"
)

// Server renders pages on one renderer, with one HTML cache. It is safe for concurrent use.
type Server struct {
	o    Options // with its defaults
	site *server.Site
	// gatherer gathers the edge_* metrics: Options.Registerer when it is one (a
	// *prometheus.Registry), the private registry when there was none, else nil.
	gatherer prometheus.Gatherer
	log      *slog.Logger
	renderer *renderclient.Client
	metrics  *server.Metrics
	shared   *sharedcache.Store // nil: no second level
	draining atomic.Bool

	mu sync.Mutex
	// mistakes are the refused options of Page and Island calls, reported where a page name
	// the bundle lacks is: Check, readiness, the log. Guarded by mu.
	mistakes []error
}

// tracerName is the instrumentation's name.
const tracerName = "github.com/sidecar-ssr/sidecar-ssr/edge/ssr"

// New connects (lazily) to the renderer and loads the client build's manifest. As soon as
// the renderer answers, every page name the Server uses is checked against its bundle:
// each missing one is logged at ERROR, and its requests answer 500; so is a page that
// streams (PageOptions.Stream) from a bundle that does not export renderToPipeableStream.
// Check waits for that answer, for a server that must not start with a typo. Its error
// joins an *OptionError per broken rule of o (Options.Validate).
func New(o Options) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	reg := o.Registerer
	if reg == nil {
		private := prometheus.NewRegistry()
		private.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg = private
	}
	gatherer, _ := reg.(prometheus.Gatherer)
	var tracer trace.Tracer
	if o.TracerProvider != nil {
		tracer = o.TracerProvider.Tracer(tracerName)
	}
	manifest, err := document.LoadManifest(o.AssetsDir)
	if err != nil {
		return nil, fmt.Errorf("ssr: assets: %w", err)
	}
	metrics := server.NewMetrics(reg)
	renderer, err := renderclient.New(o.RendererAddress, renderclient.Options{MaxPageBytes: o.MaxPageBytes, Log: log, OnDialFailure: metrics.RendererDialFailed})
	if err != nil {
		return nil, fmt.Errorf("ssr: renderer %q: %w", o.RendererAddress, err)
	}
	s := &Server{o: o, gatherer: gatherer, log: log, renderer: renderer, metrics: metrics}
	if o.SharedCacheAddress != "" {
		if s.shared, err = sharedcache.New(sharedcache.Options{
			Address: o.SharedCacheAddress, Timeout: sharedTimeout, LockTTL: o.Timeouts.Hard, HMACKey: o.SharedCacheKey, Log: log,
		}); err != nil {
			renderer.Close()
			return nil, fmt.Errorf("ssr: shared cache: %w", err)
		}
		reg.MustRegister(s.shared) // refused and forgotten purges, dropped local tiers
	}
	so := server.Options{
		Renderer: renderer, Shared: s.shared, Pages: renderer, Manifest: manifest, Cache: server.NewCache(o.CacheMaxBytes, o.CacheMaxBytes/entryShare, metrics),
		Metrics: metrics, Log: log, Tracer: tracer, Nonce: o.Nonce,
		ServerBuild: executableHash(), AssetsDir: o.AssetsDir, Timeouts: server.Timeouts(o.Timeouts),
		NotFoundTTL: notFoundTTL, PassTTL: passTTL, TTLJitter: ttlJitter,
		RenderSlots: o.RenderSlots, EarlyHints: o.EarlyHints, CompressHTML: o.CompressHTML,
	}
	if s.site, err = server.NewSite(so); err != nil {
		s.Close()
		return nil, fmt.Errorf("ssr: assets: %w", err)
	}
	return s, nil
}

// executableHash is a short hash of the running program, or "" when it cannot be read: it
// identifies the Server's own code (its loaders), which every cache key holds, so that a page
// stored by an older deploy sharing the store is not served. Any change to the program
// changes it; two replicas built apart (another GOARCH, a build stamped with its time) only
// share less. A variable: the tests play two deploys.
var executableHash = sync.OnceValue(func() string {
	path, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
})

// Check waits until the renderer answers (or ctx ends) and returns an error naming every
// page name this Server's handlers use (Page, NotFound's, and Render's pages so far) that
// the renderer's bundle lacks, every page that streams while the bundle cannot, and every
// Page and Island call whose options were refused. Call it after
// mounting the pages, before serving, so a typo stops the start. The Admin handler's
// /readyz says the same without waiting; a readiness probe of the shop's own calls Check
// with the probe's context.
//
//	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
//	defer cancel()
//	if err := pages.Check(ctx); err != nil {
//		log.Fatal(err)
//	}
func (s *Server) Check(ctx context.Context) error {
	err := s.site.Check(ctx)
	if err != nil {
		err = fmt.Errorf("ssr: %w", err)
	}
	return errors.Join(s.refused(), err)
}

// refuse records a Page or Island call whose options are invalid, and logs it: a
// programming error, which Check and readiness report until the program is mended.
func (s *Server) refuse(err error) {
	s.log.Error("options refused: the handler answers 500 until the program is mended", "err", err)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mistakes = append(s.mistakes, err)
}

// refused joins the mistakes recorded so far.
func (s *Server) refused() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.mistakes...)
}

// ready is readiness's answer: Check's, as far as known, without waiting.
func (s *Server) ready() error { return errors.Join(s.refused(), s.site.Missing()) }

// Admin returns the handler of the admin listener, the one the edge binary serves: GET
// /healthz (liveness), GET /readyz (false once Drain is called, or while Check would return
// an error: a page name the renderer's bundle lacks, options refused), GET /metrics (see
// Options.Registerer), and, for bearers of Options.AdminToken, /debug/pprof/ and POST
// /cache/purge?path=|prefix=|tag=|key=. Serve it on an address of its own, never on the
// public one.
func (s *Server) Admin() http.Handler {
	return admin.Handler(admin.Options{
		Draining: &s.draining, Ready: s.ready, Gatherer: s.gatherer, Token: s.o.AdminToken, Cache: adminPurges{s},
	})
}

// Drain turns the Admin handler's readiness false for good: call it when the process is
// told to stop (SIGTERM), before closing its listeners, so that load balancers stop
// sending it requests first. ListenAndServe calls it.
func (s *Server) Drain() { s.draining.Store(true) }

// Close closes the connections to the renderer and the shared cache. Requests still being
// served fall back.
func (s *Server) Close() error {
	if s.site != nil {
		s.site.Close()
	}
	var err error
	if s.shared != nil {
		err = s.shared.Close()
	}
	return errors.Join(s.renderer.Close(), err)
}

// NotFound returns the handler for paths nothing else serves: the app's not-found page
// with status 404, one cache entry for all of them. Mount it at "/" (or "GET /").
func (s *Server) NotFound() http.Handler { return s.site.NotFound() }

// Assets returns the handler of the client build's hashed files, with immutable cache
// headers. Mount it at "GET /assets/".
func (s *Server) Assets() http.Handler { return s.site.Assets() }

// Wrap is middleware for the shop's whole handler (a ServeMux, a chi router, a Gin engine,
// any http.Handler): request ids, a logged 500 instead of a dropped connection when a
// handler panics, the requests that no page answers (the router's own 404s, 405s and
// redirects, the shop's other handlers) counted in edge_requests_total, and the islands
// (IslandFuncs) of the HTML the shop writes itself rendered however it is written (a
// template executed into the writer, Gin's c.HTML, Echo's c.Render): the one way a page of
// the shop's own gets its islands. Pages count their own. Its writer flushes and hijacks
// through to the connection, so a router that asserts http.Flusher on it streams.
func (s *Server) Wrap(h http.Handler) http.Handler { return s.site.Wrap(h) }

// NameRoute names the route r was routed by in the metrics of a request behind Wrap that no
// page answers (edge_requests_total{route}): a pattern, never a path, which would give
// every URL a series of its own. Wrap reads net/http's ServeMux pattern by itself; other
// routers say it from a middleware: Gin's c.FullPath() (an unmatched request's is ""),
// chi's chi.RouteContext(r.Context()).RoutePattern() once the handler has run. Unnamed
// requests are counted under "(none)".
func NameRoute(r *http.Request, route string) { server.NameRoute(r, route) }

// A Purge says which stored documents Server.Purge removes: ByPath, ByPrefix, ByTag or ByKey.
type Purge struct{ by, value string }

// ByPath is the stored documents of path, every variant (header and cookie Variants). path
// is a path and query as the page's cache key holds it: "/products/7" is the page without a
// query only; "/products/7?color=red" is another document (only the query parameters the
// page keeps, CachePolicy.Query, sorted). To remove every query of a path, purge
// ByPrefix("/products/7?") beside it, or tag the page (Result.Tags) and purge ByTag.
func ByPath(path string) Purge { return Purge{"path", path} }

// ByPrefix is the stored documents of every path that starts with prefix; an empty prefix is
// none.
func ByPrefix(prefix string) Purge { return Purge{"prefix", prefix} }

// ByTag is every stored document tagged tag (Result.Tags, or load()'s cache.tags).
func ByTag(tag string) Purge { return Purge{"tag", tag} }

// ByKey is the document stored under one cache key, as the admin endpoint's
// /cache/purge?key= names it.
func ByKey(key string) Purge { return Purge{"key", key} }

// Purge removes the stored documents p names, and keeps renders of them already running
// from being stored. It returns how many documents it removed.
//
// With a shared cache, the store and every replica's cache too; ctx bounds the store's
// part. The error then says that the store's part failed (it was slow, unreachable, ctx
// ended): this replica's cache is purged all the same, every replica that heard of the
// purge refuses the store's copies it names, and the store is purged in the background
// once it answers (for up to 10 minutes).
func (s *Server) Purge(ctx context.Context, p Purge) (int, error) {
	switch p.by {
	case "path":
		return purged(s.site.PurgePath(ctx, p.value))
	case "prefix":
		return purged(s.site.PurgePrefix(ctx, p.value))
	case "tag":
		return purged(s.site.PurgeTag(ctx, p.value))
	case "key":
		found, err := purged(s.site.PurgeKey(ctx, p.value))
		if found {
			return 1, err
		}
		return 0, err
	}
	return 0, errors.New("ssr: a Purge names nothing: make it with ByPath, ByPrefix, ByTag or ByKey")
}

// adminPurges are the admin handler's purges, named as its endpoint names them.
type adminPurges struct{ s *Server }

func (a adminPurges) Purge(ctx context.Context, by, value string) (int, error) {
	return a.s.Purge(ctx, Purge{by, value})
}

// purged is a purge's result as the package returns it.
func purged[T any](n T, err error) (T, error) {
	if err != nil {
		return n, fmt.Errorf("ssr: purged here, not in the shared cache: %w", err)
	}
	return n, nil
}
