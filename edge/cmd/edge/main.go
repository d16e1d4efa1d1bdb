// Command edge is sidecar-ssr's HTTP front: routes, deadlines and fallbacks in front of the
// Node renderer sidecar.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/server"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/site"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/tracing"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Environ(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "edge:", err)
		os.Exit(1)
	}
}

// run starts the edge and blocks until ctx is done, then drains.
func run(ctx context.Context, args, environ []string, stdout io.Writer) error {
	flags := flag.NewFlagSet("edge", flag.ContinueOnError)
	configPath := flags.String("config", "", "YAML config file (default: $SSR_CONFIG, else the embedded defaults)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *configPath == "" {
		*configPath = lookup(environ, "SSR_CONFIG")
	}
	cfg, err := config.Load(*configPath, environ)
	if err != nil {
		return err
	}
	e := cfg.Edge
	log := slog.New(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: e.SlogLevel()}))

	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var tracerProvider trace.TracerProvider
	if e.OTLPEndpoint != "" {
		tp, err := tracing.Start(ctx, e.OTLPEndpoint, e.TraceSampleRatio)
		if err != nil {
			return fmt.Errorf("edge.otlp_endpoint: %w", err)
		}
		// The SDK reports failed exports here; they cost spans, never requests.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing", "endpoint", e.OTLPEndpoint, "err", err) }))
		defer func() {
			flushCtx, cancel := context.WithTimeout(context.Background(), e.ShutdownTimeout)
			defer cancel()
			if err := tp.Shutdown(flushCtx); err != nil {
				log.Warn("could not send the last spans", "err", err)
			}
		}()
		tracerProvider = tp
	}
	pages, err := site.Open(cfg, site.Options{Log: log, Registerer: registry, TracerProvider: tracerProvider})
	if err != nil {
		return err
	}
	defer pages.Close()
	log.Info("edge started", "renderer", cfg.Renderer.GRPCAddress, "routes", len(e.Routes), "tracing", cmp.Or(e.OTLPEndpoint, "off"))
	var draining atomic.Bool
	admin := server.Admin(server.AdminOptions{
		Draining: &draining, Ready: pages.Ready, Gatherer: registry, Token: e.AdminToken, TrustLoopback: e.AdminTrustLoopback, Cache: pages,
	})
	return pages.Serve(ctx, pages.ServeMux(routes(pages, e.Routes)), admin, &draining)
}

// routes mounts the config's routes: pages without a Go loader (their own load() runs in
// the renderer), the client build's assets, and the not-found page for everything else.
func routes(pages *site.Site, routes []config.Route) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /assets/", pages.Assets())
	for _, r := range routes {
		mux.Handle(r.Pattern, pages.Page(r, server.PageOptions{}))
	}
	mux.Handle(config.NotFoundPattern, pages.NotFound())
	return mux
}

func lookup(environ []string, name string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}
