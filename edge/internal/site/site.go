// Package site opens the edge's pages from one validated configuration: the renderer's
// client, the shared cache's store, the metrics, the HTML cache and the server.Site over
// them. The edge binary opens it from its config file (config.Load), the public package
// ssr from its Options overlaid on the same defaults (config.Validate); each then mounts
// its pages on it.
package site

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/renderclient"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/server"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache"
)

// Options are what a site needs besides its configuration.
type Options struct {
	// Log receives fallbacks, refused sockets and bugs. If nil, slog.Default().
	Log *slog.Logger
	// Registerer receives the edge_* metrics. If nil, they are kept in a private registry,
	// with the Go runtime's and the process's collectors (Site.Gatherer).
	Registerer prometheus.Registerer
	// TracerProvider receives a span per page request and render call. If nil, no spans.
	TracerProvider trace.TracerProvider
	// Lang is every document's lang (empty: "en"); Head trusted markup in every head.
	Lang, Head string
	// Nonce gives each response's script nonce (Content-Security-Policy); nil: none.
	Nonce func(*http.Request) string
	// ErrorPage is the app's page for a Go loader's failure; empty: the failing page's own
	// document, without props.
	ErrorPage string
	// ServerBuild identifies the Go server's own code (its loaders): part of every cache
	// key. If empty, a hash of the running executable.
	ServerBuild string
}

// tracerName is the instrumentation's name, the public package's for both ways in.
const tracerName = "github.com/sidecar-ssr/sidecar-ssr/edge/ssr"

// Site is a server.Site with the connections it owns: mount its Page, NotFound and Assets
// handlers, purge it, and Close it when done.
type Site struct {
	*server.Site
	// Gatherer gathers the edge_* metrics: Options.Registerer when it is one (a
	// *prometheus.Registry), the private registry when there was none, else nil.
	Gatherer prometheus.Gatherer
	e        config.Edge
	log      *slog.Logger
	renderer *renderclient.Client
	shared   *sharedcache.Store // nil: no second level
}

// Open connects (lazily) to cfg's renderer and shared cache, loads the client build's
// manifest, and prepares the site over them. cfg must be valid (config.Load or
// config.Validate said so): Open does not check it again. Its routes are not mounted here:
// the caller mounts each with Page.
func Open(cfg *config.Config, o Options) (*Site, error) {
	e := cfg.Edge
	log := o.Log
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
	build := o.ServerBuild
	if build == "" {
		build = executableHash()
	}
	manifest, err := document.LoadManifest(e.AssetsDir)
	if err != nil {
		return nil, fmt.Errorf("assets: %w", err)
	}
	metrics := server.NewMetrics(reg)
	address := cfg.Renderer.GRPCAddress
	renderer, err := renderclient.New(address, renderclient.Options{MaxPageBytes: e.MaxPageBytes(), Log: log, OnDialFailure: metrics.RendererDialFailed})
	if err != nil {
		return nil, fmt.Errorf("renderer %q: %w", address, err)
	}
	var shared *sharedcache.Store
	if e.SharedCacheAddress != "" {
		if shared, err = sharedcache.New(sharedcache.Options{
			Address: e.SharedCacheAddress, Timeout: e.SharedCacheTimeout, LockTTL: e.HardTimeout,
			HMACKey: []byte(e.SharedCacheKey), Log: log,
		}); err != nil {
			renderer.Close()
			return nil, fmt.Errorf("shared cache: %w", err)
		}
		reg.MustRegister(shared) // refused and forgotten purges, dropped local tiers
	}
	site, err := server.NewSite(e, server.Options{
		Renderer: renderer, Pages: renderer, Manifest: manifest, Cache: server.NewCache(e, metrics), Shared: shared,
		Metrics: metrics, Log: log, Tracer: tracer,
		Lang: o.Lang, Head: o.Head, Nonce: o.Nonce, ErrorPage: o.ErrorPage, ServerBuild: build,
	})
	if err != nil {
		renderer.Close()
		if shared != nil {
			shared.Close()
		}
		return nil, fmt.Errorf("assets: %w", err)
	}
	return &Site{Site: site, Gatherer: gatherer, e: e, log: log, renderer: renderer, shared: shared}, nil
}

// Ready returns, without waiting, an error naming every page name in use that the
// renderer's bundle lacks and every page that streams while it cannot, as far as the
// renderer has answered (nil before it has): for a readiness probe.
func (s *Site) Ready() error { return s.Missing() }

// Close stops the site's background work and closes its connections to the renderer and
// the shared cache. Requests still being served fall back.
func (s *Site) Close() error {
	s.Site.Close()
	var err error
	if s.shared != nil {
		err = s.shared.Close()
	}
	return errors.Join(s.renderer.Close(), err)
}

// executableHash is a short hash of the running program, or "" when it cannot be read.
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
