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
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/server"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/site"
)

// Server renders pages on one renderer, with one HTML cache. It is safe for concurrent use.
type Server struct {
	site *site.Site
	e    config.Edge
}

// New connects (lazily) to the renderer and loads the client build's manifest. As soon as
// the renderer answers, every page name the Server uses is checked against its bundle:
// each missing one is logged at ERROR, and its requests answer 500; so is a page that
// streams (PageOptions.Stream) from a bundle that does not export renderToPipeableStream.
// Check waits for that answer, for a server that must not start with a typo.
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

// Check waits until the renderer answers (or ctx ends) and returns an error naming every
// page name this Server's handlers use (Page, NotFound, Options.ErrorPage, and Render's
// pages so far) that the renderer's bundle lacks, and every page that streams while the
// bundle cannot. Call it after mounting the pages, before serving, so a typo stops the
// start:
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
	// Gatherer is served at /metrics. If nil, the Server's own metrics: Options.Registerer
	// when it can be gathered (a *prometheus.Registry), or, without one, the private
	// registry the Server keeps them in, with the Go runtime's and the process's collectors.
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
		gatherer = s.site.Gatherer
	}
	if gatherer == nil { // Options.Registerer cannot be gathered: the caller serves it
		gatherer = prometheus.NewRegistry()
	}
	return server.Admin(server.AdminOptions{
		Draining: draining, Ready: s.Ready, Gatherer: gatherer, Token: o.Token, TrustLoopback: o.TrustLoopback, Cache: s,
	})
}

// ListenAndServe serves handler on Options.Listen and the Admin handler (configured by
// admin) on Options.AdminListen until ctx is done (SIGTERM, typically), then drains:
// readiness turns false, both keep serving for Options.ShutdownDelay while load balancers
// notice, and requests in flight get Options.ShutdownTimeout to finish. The servers'
// timeouts are the edge binary's defaults: 5s to read a request's header, 10s its body,
// 30s to write the response, 120s idle, 64 KiB of header; at most 1024 connections at
// once on the public address. Its error wraps the cause (errors.Is(err,
// syscall.EADDRINUSE) for an address in use).
func (s *Server) ListenAndServe(ctx context.Context, handler http.Handler, admin AdminOptions) error {
	if admin.Draining == nil {
		admin.Draining = new(atomic.Bool)
	}
	if err := s.site.Serve(ctx, handler, s.Admin(admin), admin.Draining); err != nil {
		return &namedError{msg: "ssr: " + namingOptions(err.Error()), err: err}
	}
	return nil
}

// namedError is err with the config keys of its message named as the Options fields that
// set them, still unwrapping to err.
type namedError struct {
	msg string
	err error
}

func (e *namedError) Error() string { return e.msg }
func (e *namedError) Unwrap() error { return e.err }

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
