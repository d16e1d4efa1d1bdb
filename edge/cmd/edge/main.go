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
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/tracing"
	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Environ(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "edge:", err)
		os.Exit(1)
	}
}

// run starts the edge and blocks until ctx is done, then drains. The edge is the public
// package's Server, its pages the config file's routes.
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
	o := cfg.Options()
	o.Logger, o.Registerer = log, registry
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
		o.TracerProvider = tp
	}
	pages, err := ssr.New(o)
	if err != nil {
		return config.Explain(err)
	}
	defer pages.Close()
	log.Info("edge started", "renderer", cfg.Renderer.GRPCAddress, "routes", len(e.Routes), "tracing", cmp.Or(e.OTLPEndpoint, "off"))
	public := cfg.PublicServer()
	public.Handler = pages.Wrap(routes(pages, cfg.Pages()))
	return config.Explain(pages.ListenAndServe(ctx, public, cfg.ServeOptions()))
}

// routes mounts the config's pages (their own load() runs in the renderer), the client
// build's assets, and the not-found page for everything else.
func routes(pages *ssr.Server, routes []config.Page) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /assets/", pages.Assets())
	for _, p := range routes {
		mux.Handle(p.Pattern, pages.Page(p.Name, p.Options))
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
