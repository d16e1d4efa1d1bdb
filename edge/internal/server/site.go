package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/middleware"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/renderclient"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache"
)

const assetsPattern = "GET /assets/"

// notFoundRoute names the not-found page's route in metrics: the pattern it is mounted at.
const notFoundRoute = "GET /"

// Options are what a Site is built from: its parts, and the settings every page shares,
// valid and with their defaults in place (the public package sees to both).
type Options struct {
	Renderer Renderer
	Manifest *document.Manifest
	Cache    *htmlcache.Cache
	// Shared is the cache's second level, shared by every replica; nil: none.
	Shared  *sharedcache.Store
	Metrics *Metrics
	Log     *slog.Logger
	// Tracer receives the spans of requests and render calls; nil: tracing off.
	Tracer trace.Tracer
	// Pages names the renderer bundle's pages, to find page names it lacks; nil: no check.
	Pages PageLister
	// Nonce gives each response's script nonce (Content-Security-Policy); nil: none.
	Nonce func(*http.Request) string
	// ServerBuild identifies the Go server's own code (its loaders): part of every cache
	// key, with the client build's and the renderer bundle's ids.
	ServerBuild string

	// AssetsDir holds the client build: manifest.json and assets/.
	AssetsDir string
	// Timeouts are the deadlines of pages that set none.
	Timeouts Timeouts
	// NotFoundTTL is the freshness of 404s (zero: not stored).
	NotFoundTTL time.Duration
	// PassTTL is how long requests render side by side after a render that may not be stored.
	PassTTL time.Duration
	// TTLJitter shortens each stored TTL by up to this fraction, at random.
	TTLJitter float64
	// RenderSlots caps the renders that take CPU at once (see slot).
	RenderSlots int
	// EarlyHints: a 103 with the build's Link header before waiting for a render.
	EarlyHints bool
	// CompressHTML: the HTML the shop's own handlers write behind Wrap is compressed
	// (islandwriter.go).
	CompressHTML bool
}

// Site is the edge's pages over one renderer, HTML cache and client build. The edge binary
// mounts its config routes on it; the public package mounts pages with Go loaders.
type Site struct {
	o      Options
	d      deps
	assets http.Handler
	pages  PageLister

	mu     sync.Mutex
	direct map[string]*page // guarded by mu: the uncached page of each name Render was asked for
	// islands are the islands declared (Island), with how long their HTML is kept; guarded
	// by mu.
	islands map[string]time.Duration
	// islandFlights are the islands being rendered, which other pages join.
	islandFlights islandFlights

	// stop ends the subscription to other replicas' purges.
	stop context.CancelFunc
}

// NewSite prepares the pages of a site over o's renderer and cache.
func NewSite(o Options) (*Site, error) {
	build := &builds{server: o.ServerBuild}
	d := deps{
		renderer: o.Renderer, shell: document.NewShell(o.Manifest), earlyHints: o.EarlyHints, unknownBuilds: &sync.Map{},
		cache: o.Cache, flights: newFlights(flightCache{o.Cache, build.matches}), slots: make(chan struct{}, o.RenderSlots),
		jitter: o.TTLJitter, metrics: o.Metrics, log: o.Log, tracer: o.Tracer,
		nonce: o.Nonce, names: newPageNames(o.Log), build: build,
		exports: new(atomic.Pointer[renderclient.Bundle]),
	}
	if o.Shared != nil {
		d.shared = &sharedTier{store: o.Shared, metrics: o.Metrics, log: o.Log}
	}
	files, err := newAssets(filepath.Join(o.AssetsDir, "assets"), d.shared)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	if o.Shared != nil {
		// The other replicas' purges, applied to this replica's cache (its own are, at once).
		go o.Shared.Subscribe(ctx, func(p sharedcache.Purge) { purgeLocal(o.Cache, p) })
	}
	s := &Site{
		o: o, d: d, assets: o.Metrics.count(assetsPattern, false, files), direct: map[string]*page{}, islands: map[string]time.Duration{}, stop: stop,
		pages: o.Pages,
	}
	if o.Pages != nil {
		go s.followBundle(ctx)
	}
	return s, nil
}

// bundleRefresh is how often the site asks the renderer for its bundle's pages and id again
// once it has them: a reload or a new renderer changes them.
const bundleRefresh = 15 * time.Second

// followBundle checks the page names in use against the renderer's bundle as soon as it
// answers (logged, refused by Check, reported by Missing), keys the cache on its bundle id,
// and asks again every bundleRefresh until ctx ends.
func (s *Site) followBundle(ctx context.Context) {
	if s.Check(ctx) != nil && ctx.Err() != nil {
		return
	}
	tick := time.NewTicker(bundleRefresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			call, cancel := context.WithTimeout(ctx, bundleRefresh/3)
			s.Check(call)
			cancel()
		}
	}
}

// Close stops listening for other replicas' purges and for the renderer's page names.
func (s *Site) Close() { s.stop() }

// Check waits for what the renderer's bundle exports (until ctx ends) and returns an error
// naming every page name in use that it lacks, and every page that streams while it
// cannot.
func (s *Site) Check(ctx context.Context) error {
	if s.pages == nil {
		return nil
	}
	bundle, err := s.pages.ListPages(ctx)
	if err != nil {
		return fmt.Errorf("asking the renderer for its pages: %w", err)
	}
	s.d.names.learn(bundle)
	s.d.build.bundle.Store(&bundle.ID)
	s.d.exports.Store(&bundle)
	return s.d.names.missing()
}

// Missing returns Check's error as far as known (nil before the renderer answered), and
// the error of a client build the renderer's pages name that the document has long been
// unable to link.
func (s *Site) Missing() error { return errors.Join(s.d.names.missing(), s.d.unlinked()) }

// PageOptions are what a page adds to its route.
type PageOptions struct {
	// Load computes the props in Go; nil: the page's own load() does.
	Load Loader
	// UsedBy says where the page is used, in the error naming a page the bundle lacks;
	// empty: "route <pattern>".
	UsedBy string
	// PerRequest makes the page partially prerendered (prerender.go): its shell is
	// prerendered and stored, and each of these computes one of a request's own values for
	// the holes. The route must be cached, and streams.
	PerRequest map[string]RequestFunc
}

// Page serves one route: its page, cache policy, variants and deadlines.
func (s *Site) Page(r Route, o PageOptions) http.Handler {
	usedBy := cmp.Or(o.UsedBy, "route "+r.Pattern)
	p := s.newPage(r, usedBy)
	p.loader = o.Load
	p.perRequest = o.PerRequest
	if p.prerendered() {
		s.d.names.use(r.Page, usedBy, prerendering)
	}
	return s.wrap(p.route, p)
}

// newPage is a page of the site's, its name checked against the renderer's bundle.
func (s *Site) newPage(r Route, usedBy string) *page {
	if r.Timeouts == (Timeouts{}) {
		r.Timeouts = s.o.Timeouts
	}
	p := newPage(r, &s.o, s.d)
	switch {
	case r.Page == "": // the not-found page, which the bundle names
		s.d.names.useNotFound(usedBy)
	case r.Stream:
		s.d.names.use(r.Page, usedBy, streaming)
	default:
		s.d.names.use(r.Page, usedBy)
	}
	// A purge must outlive every render that began before it: a flight may wait on another
	// replica's render, then render itself, each within the hard timeout.
	s.d.cache.RememberPurgesFor(2*p.timeouts.Hard + purgeSlack)
	return p
}

// purgeSlack is how much longer than its renders may run the cache remembers a purge.
const purgeSlack = 10 * time.Second

// NotFound serves every path no route matches: the app's not-found page (the one its
// bundle's notFoundPage export names), status 404, one cache entry for all of them. It may
// be served stale for an hour while the renderer is down, since a not-found page rarely
// changes.
func (s *Site) NotFound() http.Handler {
	p := s.newPage(Route{Pattern: notFoundRoute, Cache: CachePolicy{
		TTL: s.o.NotFoundTTL, StaleWhileRevalidate: s.o.NotFoundTTL, StaleIfError: time.Hour,
	}}, "the not-found page")
	p.unmatched = true
	return s.wrap(p.route, p)
}

// Assets serves the client build's files under /assets/.
func (s *Site) Assets() http.Handler { return s.assets }

// RespondWith answers r with page rendered as decided (or err, a loader's failure),
// uncached, within the render timeout, with the fallbacks of any page: the public package's
// Server.Render. It returns the fallback's reason, or "" when the page was rendered.
// ("Render", in this package, is the renderer's call.)
func (s *Site) RespondWith(w http.ResponseWriter, r *http.Request, page string, decided *Result, err error) string {
	s.mu.Lock()
	p, ok := s.direct[page]
	if !ok {
		p = s.newPage(Route{Pattern: "render " + page, Page: page}, "Render")
		s.direct[page] = p
	}
	s.mu.Unlock()
	one := *p
	one.loader = func(*http.Request) (*Result, error) { return decided, err }
	s.wrap(one.route, &one).ServeHTTP(w, r)
	return w.Header().Get("X-SSR-Fallback")
}

// wrap gives a page handler what every response needs on any router: a request id, a logged
// 500 instead of a dropped connection on a bug, a bound on its writing when the server has
// none, a span when tracing is on, and a count in edge_requests_total.
func (s *Site) wrap(route string, h http.Handler) http.Handler {
	return middleware.Recover(s.d.log)(middleware.WithRequestID(middleware.WriteDeadline(PageWriteTimeout)(
		middleware.Trace(s.d.tracer, route)(s.d.metrics.count(route, s.d.tracer != nil, h)))))
}

// PageWriteTimeout bounds writing a page's response on a server without a WriteTimeout:
// the edge binary's default write_timeout, which a test holds equal.
const PageWriteTimeout = 30 * time.Second

// Wrap wraps the shop's handler of pages: request ids, recovered panics, the requests no
// page answers counted, and the islands its own HTML responses mark rendered.
func (s *Site) Wrap(h http.Handler) http.Handler {
	return middleware.Recover(s.d.log)(middleware.WithRequestID(s.d.metrics.countUnanswered(s.islandsIn(h))))
}
