package site

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/net/netutil"
)

// Serve serves public on edge.listen and admin on edge.admin_listen, with the configured
// server timeouts, until ctx is done (SIGTERM). Then it drains: it sets draining (which
// admin's readiness reads), both listeners keep serving for edge.shutdown_delay while load
// balancers notice, and requests in flight get edge.shutdown_timeout to finish.
func (s *Site) Serve(ctx context.Context, public, admin http.Handler, draining *atomic.Bool) error {
	e := s.e
	errorLog := slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	servers := []struct {
		name, key, addr string
		maxConns        int // 0: no cap
		srv             *http.Server
	}{
		{"public", "edge.listen", e.Listen, e.MaxConnections, &http.Server{
			Handler:           public,
			ReadHeaderTimeout: e.ReadHeaderTimeout,
			ReadTimeout:       e.ReadTimeout,
			WriteTimeout:      e.WriteTimeout,
			IdleTimeout:       e.IdleTimeout,
			MaxHeaderBytes:    e.MaxHeaderBytes,
			ErrorLog:          errorLog,
		}},
		// Its own timeouts: a profile or a purge of many pages takes longer than a page.
		{"admin", "edge.admin_listen", e.AdminListen, 0, &http.Server{
			Handler:           admin,
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       10 * time.Second,
			WriteTimeout:      60 * time.Second,
			ErrorLog:          errorLog,
		}},
	}
	// One server stopping stops the process: none may be left serving alone (a public
	// listener without the admin one has no readiness, no metrics).
	// The listeners too: a server's Serve may not have taken its own yet.
	var listeners []net.Listener
	closeAll := func() {
		for _, l := range servers {
			l.srv.Close()
		}
		for _, ln := range listeners {
			ln.Close()
		}
	}
	errc := make(chan error, len(servers))
	for _, l := range servers {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			closeAll()
			return fmt.Errorf("%s: %w", l.key, err)
		}
		listeners = append(listeners, ln)
		if l.maxConns > 0 {
			ln = netutil.LimitListener(ln, l.maxConns)
		}
		s.log.Info("listening", "listener", l.name, "address", ln.Addr().String())
		go func() { errc <- l.srv.Serve(ln) }()
	}
	select {
	case err := <-errc:
		closeAll()
		return err
	case <-ctx.Done():
	}
	draining.Store(true)
	s.log.Info("draining", "delay", e.ShutdownDelay.String(), "timeout", e.ShutdownTimeout.String())
	// Readiness is already false; the shutdown delay is the behaviour asked for.
	time.Sleep(e.ShutdownDelay)
	shutdown, cancel := context.WithTimeout(context.Background(), e.ShutdownTimeout)
	defer cancel()
	var errs []error
	for _, l := range servers {
		errs = append(errs, l.srv.Shutdown(shutdown))
	}
	s.log.Info("stopped")
	return errors.Join(errs...)
}
