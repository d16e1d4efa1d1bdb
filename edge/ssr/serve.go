package ssr

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/conns"
)

// ServeOptions configure ListenAndServe. Zero values mean the defaults given.
type ServeOptions struct {
	// AdminAddr is the admin handler's address (health, readiness, metrics, purges): keep it
	// off the public network. If empty, "127.0.0.1:9100".
	AdminAddr string
	// MaxConnections caps the public server's open connections. Each costs its buffers, and
	// one whose client stops reading holds its response until the server's WriteTimeout:
	// without a cap, clients could add them up at will. Past it, a newcomer takes the slot of
	// the connection whose client stopped reading longest ago (a write to it blocked for a
	// second), else of the one idle longest between requests (a second at least); with
	// neither, it waits in the kernel's backlog. If zero, 1024.
	MaxConnections int
	// MaxConnectionsPerClient caps one client address's open connections: past it, its
	// newcomers are refused (closed at once). A proxy in front of the server is one address
	// for all its clients: raise this, or set it to MaxConnections, behind one. If zero,
	// MaxConnections / 4.
	MaxConnectionsPerClient int
	// TrustedProxies are the addresses of proxies in front of the server, whose connections
	// carry many clients: MaxConnectionsPerClient does not bound theirs, and the per-client
	// bounds of a request on one (live encoders) apply to the client its X-Forwarded-For
	// names, the rightmost address that is not itself a trusted proxy. If nil, none: a
	// request's client is its connection's peer, whatever its headers say.
	TrustedProxies []netip.Prefix
	// ShutdownDelay is how long ListenAndServe goes on serving once its context is done,
	// readiness false, while load balancers stop sending requests. If zero, none: a process
	// that no load balancer routes to.
	ShutdownDelay time.Duration
	// ShutdownTimeout is how long ListenAndServe then waits for the requests in flight. If
	// zero, 10s.
	ShutdownTimeout time.Duration
}

// The defaults of the servers ListenAndServe runs.
const (
	defaultAddr              = ":8080"
	defaultAdminAddr         = "127.0.0.1:9100"
	defaultMaxConnections    = 1024
	defaultShutdownTimeout   = 10 * time.Second
	defaultReadHeaderTimeout = 5 * time.Second
	defaultIdleTimeout       = 120 * time.Second
	defaultMaxHeaderBytes    = 64 << 10
)

// ListenAndServe serves public, the shop's server, on public.Addr and the Admin handler on
// o.AdminAddr until ctx is done (SIGTERM, typically), then drains: readiness turns false
// (Drain), both keep serving for o.ShutdownDelay while load balancers notice, and requests
// in flight get o.ShutdownTimeout to finish. Of public's fields, only these are set, and
// only when zero: Addr ":8080", ReadHeaderTimeout 5s, IdleTimeout 120s, MaxHeaderBytes 64
// KiB, ErrorLog the Server's Logger at WARN. None of them cuts a long request or response:
// ReadTimeout and WriteTimeout stay as given, so a server-sent-events or download handler
// on the same server keeps net/http's zero (no timeout) unless the caller sets one. The
// package's own pages bound their writing at 30s on a server without a WriteTimeout (a
// negative one means none, as in net/http). An address that cannot be listened on is an
// *OptionError naming its field, which unwraps to the cause (errors.Is(err,
// syscall.EADDRINUSE)). When either server stops with an error, the other is closed, and
// the error wraps the cause.
func (s *Server) ListenAndServe(ctx context.Context, public *http.Server, o ServeOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	errorLog := slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	o = o.withDefaults(public)
	public.ErrorLog = cmp.Or(public.ErrorLog, errorLog)
	// The listener's accounting (conns) needs to see the server's connections idle and
	// their requests to carry them (the live encoders are bounded per client, and taken
	// back from clients that stopped reading); the caller's own hooks still run.
	connState, connContext := public.ConnState, public.ConnContext
	public.ConnState = func(c net.Conn, state http.ConnState) {
		conns.ConnState(c, state)
		if connState != nil {
			connState(c, state)
		}
	}
	public.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		ctx = conns.ConnContext(ctx, c)
		if connContext != nil {
			ctx = connContext(ctx, c)
		}
		return ctx
	}
	servers := []struct {
		name, addrField string
		srv             *http.Server
		maxConns        int // 0: no cap
	}{
		{"public", "http.Server.Addr", public, o.MaxConnections},
		// Its own timeouts: a profile or a purge of many pages takes longer than a page.
		{"admin", "ServeOptions.AdminAddr", &http.Server{
			Addr:              o.AdminAddr,
			Handler:           s.Admin(),
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       10 * time.Second,
			WriteTimeout:      60 * time.Second,
			ErrorLog:          errorLog,
		}, 0},
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
		ln, err := net.Listen("tcp", l.srv.Addr)
		if err != nil {
			closeAll()
			return &OptionError{Field: l.addrField, err: err, says: func(func(string) string) string {
				return "cannot be listened on: " + err.Error()
			}}
		}
		listeners = append(listeners, ln)
		if l.maxConns > 0 {
			ln = conns.Listen(ln, conns.Options{
				Max: l.maxConns, PerClient: o.MaxConnectionsPerClient, Trusted: o.TrustedProxies, Closed: s.metrics.ConnectionClosed,
			})
		}
		s.log.Info("listening", "listener", l.name, "address", ln.Addr().String())
		go func() { errc <- l.srv.Serve(ln) }()
	}
	select {
	case err := <-errc:
		closeAll()
		return fmt.Errorf("ssr: %w", err)
	case <-ctx.Done():
	}
	s.Drain()
	delay, timeout := o.ShutdownDelay, o.ShutdownTimeout
	s.log.Info("draining", "delay", delay.String(), "timeout", timeout.String())
	// Readiness is already false; the shutdown delay is the behaviour asked for.
	time.Sleep(delay)
	shutdown, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var errs []error
	for _, l := range servers {
		errs = append(errs, l.srv.Shutdown(shutdown))
	}
	s.log.Info("stopped")
	return errors.Join(errs...)
}

// withDefaults is o with its defaults, and public's zero fields set to theirs.
func (o ServeOptions) withDefaults(public *http.Server) ServeOptions {
	orDefault(&public.Addr, defaultAddr)
	orDefault(&public.ReadHeaderTimeout, defaultReadHeaderTimeout)
	orDefault(&public.IdleTimeout, defaultIdleTimeout)
	orDefault(&public.MaxHeaderBytes, defaultMaxHeaderBytes)
	orDefault(&o.AdminAddr, defaultAdminAddr)
	orDefault(&o.MaxConnections, defaultMaxConnections)
	orDefault(&o.MaxConnectionsPerClient, max(1, o.MaxConnections/4))
	orDefault(&o.ShutdownTimeout, defaultShutdownTimeout)
	return o
}

// Validate returns the error ListenAndServe would return for o's values before it listens,
// nil if they are valid.
func (o ServeOptions) Validate() error {
	var rs rules
	if o.MaxConnections < 0 {
		rs.broken("ServeOptions.MaxConnections", "must not be negative, got %d", o.MaxConnections)
	}
	if o.MaxConnectionsPerClient < 0 {
		rs.broken("ServeOptions.MaxConnectionsPerClient", "must not be negative, got %d", o.MaxConnectionsPerClient)
	}
	for field, d := range map[string]time.Duration{
		"ServeOptions.ShutdownDelay": o.ShutdownDelay, "ServeOptions.ShutdownTimeout": o.ShutdownTimeout,
	} {
		if d < 0 {
			rs.broken(field, "must not be negative, got %s", d)
		}
	}
	return rs.err()
}
