// Command edge is sidecar-ssr's HTTP front: routes, deadlines and fallbacks in front of the
// Node renderer sidecar.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/renderclient"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/server"
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

	manifest, err := document.LoadManifest(e.AssetsDir)
	if err != nil {
		return fmt.Errorf("edge.assets_dir: %w", err)
	}
	renderer, err := renderclient.New(cfg.Renderer.GRPCAddress, renderclient.Options{MaxPageBytes: e.MaxPageBytes(), Log: log})
	if err != nil {
		return fmt.Errorf("renderer.grpc_address: %w", err)
	}
	defer renderer.Close()
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := server.NewMetrics(registry)
	cache := server.NewCache(e, metrics)
	handler, err := server.New(e, server.Options{Renderer: renderer, Manifest: manifest, Cache: cache, Metrics: metrics, Log: log})
	if err != nil {
		return fmt.Errorf("edge.assets_dir: %w", err)
	}

	errorLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	public := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: e.ReadHeaderTimeout,
		ReadTimeout:       e.ReadTimeout,
		WriteTimeout:      e.WriteTimeout,
		IdleTimeout:       e.IdleTimeout,
		MaxHeaderBytes:    e.MaxHeaderBytes,
		ErrorLog:          errorLog,
	}
	var draining atomic.Bool
	admin := &http.Server{
		Handler:           server.Admin(server.AdminOptions{Draining: &draining, Gatherer: registry, Token: e.AdminToken, TrustLoopback: e.AdminTrustLoopback, Cache: cache}),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		ErrorLog:          errorLog,
	}

	errc := make(chan error, 2)
	for _, l := range []struct {
		name, key, addr string
		srv             *http.Server
	}{{"public", "edge.listen", e.Listen, public}, {"admin", "edge.admin_listen", e.AdminListen, admin}} {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			return fmt.Errorf("%s: %w", l.key, err)
		}
		log.Info("listening", "listener", l.name, "address", ln.Addr().String())
		go func() { errc <- l.srv.Serve(ln) }()
	}
	log.Info("edge started", "renderer", cfg.Renderer.GRPCAddress, "build_id", manifest.BuildID, "routes", len(e.Routes))

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	draining.Store(true)
	log.Info("draining", "delay", e.ShutdownDelay.String(), "timeout", e.ShutdownTimeout.String())
	// Readiness is already false; keep serving while load balancers notice.
	time.Sleep(e.ShutdownDelay)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), e.ShutdownTimeout)
	defer cancel()
	err = errors.Join(public.Shutdown(shutdownCtx), admin.Shutdown(shutdownCtx))
	log.Info("stopped")
	return err
}

func lookup(environ []string, name string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}
