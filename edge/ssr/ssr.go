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
// The edge binary (cmd/edge) is the same implementation with routes from a config file.
package ssr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/server"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/site"
)

// Options configure a Server. Zero values mean the defaults given, which are the edge
// binary's (edge/internal/config/defaults.yaml).
type Options struct {
	// Renderer is the renderer's gRPC address. If empty, "unix:///tmp/sidecar-ssr/renderer.sock".
	Renderer string
	// AssetsDir is the client build: manifest.json and assets/. If empty, "app/dist/client".
	AssetsDir string
	// RenderTimeout is how long a request waits for its page (the loader and the render):
	// past it, it gets the stale copy or the client-side-render document. If zero, 150ms.
	RenderTimeout time.Duration
	// HardTimeout bounds the loader and the render, which go on after RenderTimeout to fill
	// the cache. If zero, 2s.
	HardTimeout time.Duration
	// MaxPageMB bounds a rendered page. If zero, 16.
	MaxPageMB int
	// MaxPropsMB bounds the props a loader returns. If zero, 3.
	MaxPropsMB int
	// MaxRendersInFlight caps renders at once, each page's Loader included; past it a request
	// gets its fallback at once, before its Loader runs.
	// If zero, 64.
	MaxRendersInFlight int
	// NotFoundPage is the app's page for paths nothing serves (404). If empty, "not-found".
	NotFoundPage string
	// CacheMaxMB bounds the HTML cache by the memory its documents hold. If zero, 256.
	CacheMaxMB int
	// CacheMaxEntryMB refuses larger documents (every encoding counted). If zero, 8.
	CacheMaxEntryMB int
	// CacheNotFoundTTL is the freshness of 404s. If zero, 10s.
	CacheNotFoundTTL time.Duration
	// CacheTTLJitter shortens each stored TTL by up to this fraction, at random, so entries
	// stored together do not expire together. If zero, 0.1; negative: none.
	CacheTTLJitter float64
	// CachePassTTL is how long requests render side by side after a render that may not be
	// stored. If zero, 10s.
	CachePassTTL time.Duration
	// CacheIgnoreQuery are query parameters no page reads (a trailing * matches a prefix).
	// If nil, common tracking parameters (utm_*, fbclid, gclid...).
	CacheIgnoreQuery []string
	// EarlyHints sends a 103 Early Hints response with the client build's scripts and styles
	// (Link: rel=modulepreload, rel=preload) before a request waits for its render, so the
	// browser fetches them meanwhile. Off by default here: httptest.ResponseRecorder, and
	// middleware that records the first status it sees, take the 103 for the final status.
	// The edge binary turns it on (edge.early_hints).
	EarlyHints bool
	// SharedCache turns on the cache's second level, shared by every replica of the server:
	// a Redis or Valkey at redis://host:port/db, rediss://…, or unix:///path. A page one
	// replica rendered is then a hit on the others, a cold page is rendered once across them,
	// and purges reach them all. If empty, each replica has only its own cache.
	SharedCache string
	// SharedCacheKey, if not empty, authenticates every value in that store (HMAC-SHA256):
	// a value something else wrote there is a miss. At least 32 bytes, the same on every
	// replica.
	SharedCacheKey []byte
	// SharedCacheTimeout bounds each call to that store; past it the server goes on without
	// it. If zero, 25ms.
	SharedCacheTimeout time.Duration
	// TracerProvider receives a span per page request (a child of the caller's when its W3C
	// traceparent says so), its cache lookup, a wait on another request's render, the
	// Loader, and the render call, whose trace the renderer continues (with its own
	// renderer.otlp_endpoint). If nil, no spans, at no cost.
	TracerProvider trace.TracerProvider
	// Registerer receives the edge_* metrics. If nil, they are kept in a private registry.
	// Register one Server per Registerer.
	Registerer prometheus.Registerer
	// Logger receives fallbacks, refused sockets and bugs. If nil, slog.Default().
	Logger *slog.Logger
	// Lang is the lang of every document's html element. If empty, "en".
	Lang string
	// Head is trusted markup added to every document's head (a favicon, a font, an
	// analytics tag), before the page's own head tags.
	Head string
	// Nonce returns the Content-Security-Policy nonce of the response to r (typically set
	// by the shop's CSP middleware in r's context): every script element the document
	// carries gets it, a stored page included (its copy is made without one, and each
	// response gets its own). If nil, scripts carry no nonce.
	Nonce func(r *http.Request) string
	// BuildID identifies this server's own code (its loaders): a stored page records it, and
	// a page stored by a server of another BuildID (an older deploy, sharing the cache's
	// store) is not served. If empty, a hash of the running executable, which changes with
	// any change to the program.
	BuildID string
	// ErrorPage is the app's page for a Loader's failure: the response has the status the
	// loader chose (see LoadError) and a document whose page is ErrorPage with props
	// {"status": N}, which the browser renders. If empty, the failing page's document
	// without props.
	ErrorPage string
}

// Server renders pages on one renderer, with one HTML cache. It is safe for concurrent use.
type Server struct {
	site *site.Site
	e    config.Edge
}

// New connects (lazily) to the renderer and loads the client build's manifest. As soon as
// the renderer answers, every page name the Server uses is checked against its bundle:
// each missing one is logged at ERROR, and its requests answer 500. Check waits for that
// answer, for a server that must not start with a typo.
func New(o Options) (*Server, error) {
	cfg, err := o.config()
	if err != nil {
		return nil, fmt.Errorf("ssr: %w", err)
	}
	if err := config.Validate(cfg); err != nil {
		return nil, optionsError(err)
	}
	s, err := site.Open(cfg, site.Options{
		Log: o.Logger, Registerer: o.Registerer, TracerProvider: o.TracerProvider,
		Lang: o.Lang, Head: o.Head, Nonce: o.Nonce, ErrorPage: o.ErrorPage, ServerBuild: o.BuildID,
	})
	if err != nil {
		return nil, fmt.Errorf("ssr: %w", err)
	}
	return &Server{site: s, e: cfg.Edge}, nil
}

// config is the configuration o describes: the edge binary's embedded defaults, with each
// field of o that sets a config key (optionKeys) in its place when not zero. It has no
// routes: the Server's pages are mounted by Page.
func (o Options) config() (*config.Config, error) {
	cfg, err := config.Defaults()
	if err != nil {
		return nil, err
	}
	cfg.Edge.Routes = nil
	e := &cfg.Edge
	set(&cfg.Renderer.GRPCAddress, o.Renderer)
	set(&e.AssetsDir, o.AssetsDir)
	set(&e.RenderTimeout, o.RenderTimeout)
	set(&e.HardTimeout, o.HardTimeout)
	set(&e.MaxPageMB, o.MaxPageMB)
	set(&e.MaxPropsMB, o.MaxPropsMB)
	set(&e.MaxRendersInFlight, o.MaxRendersInFlight)
	set(&e.NotFoundPage, o.NotFoundPage)
	set(&e.CacheMaxMB, o.CacheMaxMB)
	set(&e.CacheMaxEntryMB, o.CacheMaxEntryMB)
	set(&e.CacheNotFoundTTL, o.CacheNotFoundTTL)
	set(&e.CachePassTTL, o.CachePassTTL)
	if o.CacheTTLJitter < 0 {
		e.CacheTTLJitter = 0
	} else {
		set(&e.CacheTTLJitter, o.CacheTTLJitter)
	}
	if o.CacheIgnoreQuery != nil {
		e.CacheIgnoreQuery = o.CacheIgnoreQuery
	}
	e.EarlyHints = o.EarlyHints
	set(&e.SharedCacheAddress, o.SharedCache)
	set(&e.SharedCacheKey, string(o.SharedCacheKey))
	set(&e.SharedCacheTimeout, o.SharedCacheTimeout)
	return cfg, nil
}

func set[T comparable](field *T, value T) {
	var zero T
	if value != zero {
		*field = value
	}
}

// optionKeys names the Options field that sets each config key, for the errors of
// config.Validate: they name the field, not the key.
var optionKeys = map[string]string{
	"renderer.grpc_address":      "Renderer",
	"edge.assets_dir":            "AssetsDir",
	"edge.render_timeout":        "RenderTimeout",
	"edge.hard_timeout":          "HardTimeout",
	"edge.max_page_mb":           "MaxPageMB",
	"edge.max_props_mb":          "MaxPropsMB",
	"edge.max_renders_in_flight": "MaxRendersInFlight",
	"edge.not_found_page":        "NotFoundPage",
	"edge.cache_max_mb":          "CacheMaxMB",
	"edge.cache_max_entry_mb":    "CacheMaxEntryMB",
	"edge.cache_not_found_ttl":   "CacheNotFoundTTL",
	"edge.cache_pass_ttl":        "CachePassTTL",
	"edge.cache_ttl_jitter":      "CacheTTLJitter",
	"edge.cache_ignore_query":    "CacheIgnoreQuery",
	"edge.early_hints":           "EarlyHints",
	"edge.shared_cache_address":  "SharedCache",
	"edge.shared_cache_key":      "SharedCacheKey",
	"edge.shared_cache_timeout":  "SharedCacheTimeout",
}

// configKey matches a config key in config.Validate's messages.
var configKey = regexp.MustCompile(`\b(?:edge|renderer)\.[a-z_]+\b`)

// optionsError is config.Validate's error as New returns it: each broken rule names the
// Options fields, "ssr: Options.MaxPageMB must be at least 1, got -1".
func optionsError(err error) error {
	field := func(key string) string {
		if f, ok := optionKeys[key]; ok {
			return "Options." + f
		}
		return key // a default no Options field sets: valid, unless the defaults are not
	}
	var errs []error
	for _, err := range unjoin(err) {
		ke, ok := errors.AsType[*config.KeyError](err)
		if !ok {
			errs = append(errs, fmt.Errorf("ssr: %w", err))
			continue
		}
		errs = append(errs, fmt.Errorf("ssr: %s %s", field(ke.Key), configKey.ReplaceAllStringFunc(ke.Msg, field)))
	}
	return errors.Join(errs...)
}

// unjoin is the errors errors.Join joined into err, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// Check waits until the renderer answers (or ctx ends) and returns an error naming every
// page name this Server's handlers use (Page, NotFound, Options.ErrorPage, and Render's
// pages so far) that the renderer's bundle lacks. Call it after mounting the pages, before
// serving, so a typo stops the start:
//
//	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
//	defer cancel()
//	if err := pages.Check(ctx); err != nil {
//		log.Fatal(err)
//	}
func (s *Server) Check(ctx context.Context) error {
	if err := s.site.Check(ctx); err != nil {
		return fmt.Errorf("ssr: %w", err)
	}
	return nil
}

// AdminOptions configure the Server's admin handler.
type AdminOptions struct {
	// Draining, once set (at SIGTERM, before the listeners close), turns readiness false.
	// If nil, readiness follows only Ready.
	Draining *atomic.Bool
	// Gatherer is served at /metrics: the registry given as Options.Registerer, with the
	// process's own collectors. If nil, /metrics serves no metric.
	Gatherer prometheus.Gatherer
	// Token admits "Authorization: Bearer <Token>" to /debug/pprof/ and POST /cache/purge
	// from any address. If empty, only TrustLoopback callers are admitted.
	Token string
	// TrustLoopback admits loopback callers to them without the token. Keep it off where
	// the loopback is shared with other code (the renderer's pod).
	TrustLoopback bool
}

// Admin returns the handler of the admin listener, the one the edge binary serves: GET
// /healthz (liveness), GET /readyz (false while draining, or while Ready reports a page
// name the renderer's bundle lacks), GET /metrics, and, for the token's bearers and
// trusted loopback callers, /debug/pprof/ and POST /cache/purge?path=|prefix=|tag=|key=.
// Serve it on an address of its own, never on the public one.
func (s *Server) Admin(o AdminOptions) http.Handler {
	draining := o.Draining
	if draining == nil {
		draining = new(atomic.Bool)
	}
	gatherer := o.Gatherer
	if gatherer == nil {
		gatherer = prometheus.NewRegistry()
	}
	return server.Admin(server.AdminOptions{
		Draining: draining, Ready: s.Ready, Gatherer: gatherer, Token: o.Token, TrustLoopback: o.TrustLoopback, Cache: s,
	})
}

// Ready returns, without waiting, the error Check would return as far as the renderer has
// answered (nil before it has): for a readiness probe, so that a deploy with a page name
// its bundle lacks never becomes ready.
func (s *Server) Ready() error {
	if err := s.site.Ready(); err != nil {
		return fmt.Errorf("ssr: %w", err)
	}
	return nil
}

// Close closes the connections to the renderer and the shared cache. Requests still being
// served fall back.
func (s *Server) Close() error { return s.site.Close() }

// A Loader computes a page's props in Go. It runs only when the page must be rendered (a
// miss, a refresh, a request that bypasses the cache), once for all the requests waiting
// for that render: a cache hit never calls it.
//
// The request it gets holds only what the page's cache key holds, since the render may be
// shared and stored: the path and its values, the query parameters the page keeps, and
// the declared Variants (a request that bypasses the cache gets everything). Its context
// ends at HardTimeout, not when the client goes away, and, for a render that may be
// shared, carries none of the values the shop's middleware put in the request's context
// (a user, a session) except the trace span: what one visitor's middleware knows must not
// end up in a page stored for everyone. A request that bypasses the cache keeps them.
// An error, or a panic, answers with the stale copy if there is one, else with status 503
// (or a LoadError's) and Options.ErrorPage's document (X-SSR-Fallback: load-error); the
// error is logged.
type Loader func(*http.Request) (Result, error)

// LoadError is a Loader's error that chooses the response's status: 500, 502, 503 or 504
// (any other answers 503, as a plain error does).
type LoadError struct {
	Status int
	Err    error
}

func (e *LoadError) Error() string { return e.Err.Error() }
func (e *LoadError) Unwrap() error { return e.Err }

// Result is what a Loader decided for one render. Its Status, Redirect, NotFound and
// Header hold even when the render fails or is late: the client-side-render document then
// has the status (404 and the not-found page for NotFound), and a redirect needs no render.
type Result struct {
	// Props are the page's props: marshalled to JSON once (it must give a JSON object), or
	// passed as they are when a json.RawMessage. The page receives them as ctx.props in its
	// load(), or as its component's props when it has none; the browser hydrates with the
	// props the page rendered with.
	Props any
	// Status, if not zero, is the response's status instead of the page's.
	Status int
	// Header is added to the response. A Set-Cookie makes the response private: it is not
	// stored, and it reaches only the request whose loader ran.
	Header http.Header
	// Redirect, if not empty, answers with a redirect there instead of rendering, with
	// RedirectStatus (if zero, 302). 301 and 308 are cached like pages.
	Redirect       string
	RedirectStatus int
	// NotFound renders the app's not-found page with status 404.
	NotFound bool
	// MaxAge, if not zero, shortens the page's Cache.TTL for this render.
	MaxAge time.Duration
	// NoStore keeps this render out of the cache, and makes it private.
	NoStore bool
	// Tags are surrogate keys of the stored page ("product:7"): PurgeTag removes every page
	// that carries one, on every replica with a shared cache.
	Tags []string
}

// PageOptions configure a page. The zero value renders on every request, uncached, with
// the page's own load().
type PageOptions struct {
	// Load computes the props in Go. If nil, the page's own load() does, in the renderer.
	Load Loader
	// Cache is the page's cache policy; a zero TTL means not cached.
	Cache Cache
	// Variants name the request parts the page depends on besides its path and query:
	// "header:Accept-Language", "cookie:currency". They are part of the cache key, named in
	// Vary, given to the loader and sent to the page as ctx.variants.
	Variants []string
	// RenderTimeout and HardTimeout override the Server's.
	RenderTimeout, HardTimeout time.Duration
	// Lang overrides Options.Lang for this page's documents.
	Lang string
	// Head is trusted markup added to this page's documents' head, after Options.Head.
	Head string
	// Route names the page in metrics and cache keys. If empty, the page's name. Give each
	// Page handler its own (e.g. the pattern it is mounted at) when one page name is served
	// by several handlers with different options. Path values do not depend on it: they
	// come from the pattern the handler is mounted at.
	Route string
}

// Cache is a page's cache policy (RFC 5861 windows).
type Cache struct {
	// TTL is how long a render is fresh. Zero: the page is not cached.
	TTL time.Duration
	// StaleWhileRevalidate: past TTL, the stored copy is served at once while one
	// background render refreshes it.
	StaleWhileRevalidate time.Duration
	// StaleIfError: past TTL, the stored copy is served when a render fails or is late.
	StaleIfError time.Duration
	// Query lists the query parameters the page reads; the others are left out of the key
	// and of the render. Nil means all but Options.CacheIgnoreQuery.
	Query []string
	// PersonalizeCookies name cookies whose presence makes a request personal: it bypasses
	// the cache, and its loader sees the whole request.
	PersonalizeCookies []string
}

// Page returns the handler of the app's page name. Mount it on any router; path values
// (Go 1.22 ServeMux patterns) reach the page as ctx.params. It panics when o is invalid
// (a variant that is not "header:Name" or "cookie:name", RenderTimeout above HardTimeout),
// as a ServeMux does for a bad pattern: it is a programming error, found at start.
func (s *Server) Page(name string, o PageOptions) http.Handler {
	route := o.Route
	if route == "" {
		route = name
	}
	r := config.Route{
		Pattern: route, Page: name, RenderTimeout: o.RenderTimeout, HardTimeout: o.HardTimeout, Variants: o.Variants,
		Cache: config.RouteCache{
			TTL: o.Cache.TTL, StaleWhileRevalidate: o.Cache.StaleWhileRevalidate, StaleIfError: o.Cache.StaleIfError,
			Query: o.Cache.Query, PersonalizeCookies: o.Cache.PersonalizeCookies,
		},
	}
	if err := config.ValidateRoute(r, s.e); err != nil {
		panic("ssr: page " + name + ": " + err.Error())
	}
	po := server.PageOptions{Lang: o.Lang, Head: o.Head, UsedBy: fmt.Sprintf("Page(%q)", name)}
	if o.Route != "" {
		po.UsedBy += " for route " + o.Route
	}
	if o.Load != nil {
		po.Load = func(r *http.Request) (*server.Loaded, error) {
			res, err := o.Load(r)
			if le, ok := errors.AsType[*LoadError](err); ok {
				return nil, &server.LoadFailure{Status: le.Status, Err: err}
			}
			if err != nil {
				return nil, err
			}
			return res.loaded()
		}
	}
	return s.site.Page(r, po)
}

func (res Result) loaded() (*server.Loaded, error) {
	props, err := marshalProps(res.Props)
	if err != nil {
		return nil, err
	}
	return &server.Loaded{
		Props: props, Status: res.Status, Header: res.Header, Redirect: res.Redirect, RedirectStatus: res.RedirectStatus,
		NotFound: res.NotFound, MaxAgeSeconds: uint32(res.MaxAge / time.Second), NoStore: res.NoStore, Tags: res.Tags,
	}, nil
}

func marshalProps(props any) ([]byte, error) {
	switch p := props.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return p, nil
	}
	b, err := json.Marshal(props)
	if err != nil {
		return nil, fmt.Errorf("props are not JSON: %w", err)
	}
	return b, nil
}

// ErrFallback is what Render's error wraps when the page was not rendered on the server
// and the response is the client-side-render document (X-SSR-Fallback names why).
var ErrFallback = errors.New("the page was not rendered on the server")

// Render answers r with page as res decides, uncached, within RenderTimeout: for one page
// inside a handler of the shop's own. res is what a Loader would return: its Props,
// Status (the response's status: do not call w.WriteHeader before Render), Header,
// Redirect and NotFound hold as they do for a Page. The response has been written when
// Render returns; the error (wrapping ErrFallback) says that it is the client-side-render
// document, and why, for the handler's logs and metrics.
func (s *Server) Render(w http.ResponseWriter, r *http.Request, page string, res Result) error {
	loaded, err := res.loaded()
	if reason := s.site.Render(w, r, page, loaded, err); reason != "" {
		return fmt.Errorf("ssr: page %q: %w (%s)", page, ErrFallback, reason)
	}
	return nil
}

// NotFound returns the handler for paths nothing else serves: the app's not-found page
// with status 404, one cache entry for all of them. Mount it at "/" (or "GET /").
func (s *Server) NotFound() http.Handler { return s.site.NotFound() }

// Assets returns the handler of the client build's hashed files, with immutable cache
// headers. Mount it at "GET /assets/".
func (s *Server) Assets() http.Handler { return s.site.Assets() }

// ServeMux wraps the shop's ServeMux: request ids, a logged 500 instead of a dropped
// connection when a handler panics, and the requests the mux answers itself (405, a
// redirect to a cleaned path) counted in edge_requests_total. Pages count their own.
func (s *Server) ServeMux(mux *http.ServeMux) http.Handler { return s.site.ServeMux(mux) }

// PurgePath removes the stored documents of path, every variant (header and cookie
// Variants), and keeps renders of it already running from being stored. path is a path
// and query as the page's cache key holds it: "/products/7" is the page without a query
// only; "/products/7?color=red" is another document (only the query parameters the page
// keeps, Cache.Query, sorted). To remove every query of a path, use
// PurgePrefix("/products/7?") beside PurgePath("/products/7"), or tag the page
// (Result.Tags) and use PurgeTag. It returns how many documents it removed.
//
// With a shared cache, the store and every replica's cache too. The error then says that
// the store's part failed (it was slow, unreachable): this replica's cache is purged all the
// same, every replica that heard of the purge refuses the store's copies it names, and the
// store is purged in the background once it answers (for up to 10 minutes).
func (s *Server) PurgePath(path string) (int, error) { return purged(s.site.PurgePath(path)) }

// PurgePrefix is PurgePath for every path that starts with prefix; an empty prefix purges
// nothing.
func (s *Server) PurgePrefix(prefix string) (int, error) {
	return purged(s.site.PurgePrefix(prefix))
}

// PurgeKey removes the document stored under one cache key, as the admin endpoint's
// /cache/purge?key= names it, and reports whether there was one; the error is PurgePath's.
func (s *Server) PurgeKey(key string) (bool, error) { return purged(s.site.PurgeKey(key)) }

// PurgeTag removes every stored document tagged tag (Result.Tags, or load()'s cache.tags),
// like PurgePath. It returns how many documents it removed.
func (s *Server) PurgeTag(tag string) (int, error) { return purged(s.site.PurgeTag(tag)) }

// purged is a purge's result as the package returns it.
func purged[T any](n T, err error) (T, error) {
	if err != nil {
		return n, fmt.Errorf("ssr: purged here, not in the shared cache: %w", err)
	}
	return n, nil
}
