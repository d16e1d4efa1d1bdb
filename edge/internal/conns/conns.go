// Package conns holds the public listener's connections to account: each one's client, and
// whether its client still reads. What is scarce (connection slots, live encoders) is bounded
// per client as well as in total, and when a bound is reached the connection whose client
// stopped reading longest ago goes first, never the newcomer: a client that opens connections
// and never reads its responses can hold a slot only while nobody else needs it.
//
// A connection "does not read" while a write to it has been blocked for StalledAfter: its
// socket's send buffer is full because its client takes nothing. A keep-alive connection
// idle between requests for as long may be closed at the cap too, after every stalled one:
// HTTP clients retry on an idle connection that closes.
package conns

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Reasons a connection is refused or closed, for metrics and logs.
const (
	// ReasonPerClient: its client holds PerClient connections already, none of them stalled.
	ReasonPerClient = "per-client"
	// ReasonStalled: closed at a bound for a newcomer, its client not reading.
	ReasonStalled = "stalled"
	// ReasonIdle: an idle keep-alive connection closed at the cap for a newcomer.
	ReasonIdle = "idle"
)

// Options configure a Listener. Zero values mean the defaults given.
type Options struct {
	// Max bounds the open connections. Past it, the stalest stalled connection is closed
	// for the newcomer, else the longest-idle one; with neither, the newcomer waits for a
	// slot. Required.
	Max int
	// PerClient bounds one client's open connections: past it, that client's own stalest
	// stalled connection is closed, else its newcomer is refused. If zero, Max / 4.
	PerClient int
	// StalledAfter is how long a write must have been blocked for its connection to count as
	// not reading. If zero, 1s.
	StalledAfter time.Duration
	// Trusted are the proxies the operator trusts, which carry many clients' connections:
	// PerClient does not bound theirs, and a request on one names its client in
	// X-Forwarded-For (Conn.ClientOf). Nil: none.
	Trusted []netip.Prefix
	// Closed, if set, is told each connection refused or closed for another, with its
	// reason: ReasonPerClient, ReasonStalled or ReasonIdle.
	Closed func(reason string)
	// Now is the clock. If nil, time.Now.
	Now func() time.Time
}

// Listener is a net.Listener whose connections are accounted for as the package says.
type Listener struct {
	net.Listener
	o       Options
	mu      sync.Mutex
	live    map[*Conn]struct{} // guarded by mu
	clients map[netip.Addr]int // open connections per client, guarded by mu
	freed   chan struct{}      // a slot freed; capacity 1, never blocks a sender
	done    chan struct{}      // closed by Close
	once    sync.Once
}

// Listen accounts for inner's connections.
func Listen(inner net.Listener, o Options) *Listener {
	if o.PerClient <= 0 {
		o.PerClient = max(1, o.Max/4)
	}
	if o.StalledAfter <= 0 {
		o.StalledAfter = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Closed == nil {
		o.Closed = func(string) {}
	}
	return &Listener{
		Listener: inner, o: o, live: map[*Conn]struct{}{}, clients: map[netip.Addr]int{},
		freed: make(chan struct{}, 1), done: make(chan struct{}),
	}
}

// Accept returns the next connection within the bounds.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		inner, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c := &Conn{Conn: inner, l: l, client: clientOf(inner)}
		admitted, err := l.admit(c)
		if err != nil {
			inner.Close()
			return nil, err
		}
		if admitted {
			return c, nil
		}
		inner.Close() // refused: its client is at its bound
	}
}

// admit takes a slot for c, closing others for it as the package says; false if c is
// refused. An error: the listener closed while c waited.
func (l *Listener) admit(c *Conn) (bool, error) {
	for {
		l.mu.Lock()
		bounded := !l.trusted(c.client)
		if bounded && l.clients[c.client] >= l.o.PerClient {
			victim := l.stalestLocked(func(v *Conn) bool { return v.client == c.client })
			l.mu.Unlock()
			if victim == nil {
				l.o.Closed(ReasonPerClient)
				return false, nil
			}
			l.closeFor(victim)
			continue
		}
		if len(l.live) >= l.o.Max {
			victim := l.stalestLocked(nil)
			l.mu.Unlock()
			if victim != nil {
				l.closeFor(victim)
				continue
			}
			// Nobody to close: wait for a slot, as a LimitListener would, looking again
			// each StalledAfter (a blocked write becomes a stalled one).
			timer := time.NewTimer(l.o.StalledAfter)
			select {
			case <-l.freed:
			case <-timer.C:
			case <-l.done:
				timer.Stop()
				return false, net.ErrClosed
			}
			timer.Stop()
			continue
		}
		l.live[c] = struct{}{}
		l.clients[c.client]++
		l.mu.Unlock()
		return true, nil
	}
}

// stalestLocked is the connection among those match accepts (all, if nil) whose write has
// been blocked longest, if past StalledAfter; else the one idle longest, if past it too (a
// connection pipelining requests is idle for a moment between them); else nil.
func (l *Listener) stalestLocked(match func(*Conn) bool) *Conn {
	now := l.o.Now()
	var stalled, idlest *Conn
	var stalledSince, idleSince time.Time
	for c := range l.live {
		if match != nil && !match(c) {
			continue
		}
		if since := c.StalledSince(); !since.IsZero() && now.Sub(since) >= l.o.StalledAfter && (stalled == nil || since.Before(stalledSince)) {
			stalled, stalledSince = c, since
		}
		if since := load(&c.idleSince); !since.IsZero() && now.Sub(since) >= l.o.StalledAfter && (idlest == nil || since.Before(idleSince)) {
			idlest, idleSince = c, since
		}
	}
	if stalled != nil {
		return stalled
	}
	return idlest
}

// trusted reports whether a is a trusted proxy's address.
func (l *Listener) trusted(a netip.Addr) bool {
	for _, p := range l.o.Trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// closeFor closes victim for a newcomer, and counts it if this closed it; its slot is free
// once it returns.
func (l *Listener) closeFor(victim *Conn) {
	reason := ReasonIdle
	if victim.stalledAt(l.o.Now(), l.o.StalledAfter) {
		reason = ReasonStalled
	}
	if victim.close() {
		l.o.Closed(reason)
	}
}

// release frees c's slot.
func (l *Listener) release(c *Conn) {
	l.mu.Lock()
	if _, ok := l.live[c]; ok {
		delete(l.live, c)
		if l.clients[c.client]--; l.clients[c.client] <= 0 {
			delete(l.clients, c.client)
		}
	}
	l.mu.Unlock()
	l.wake()
}

// wake tells an Accept waiting at the cap to look again.
func (l *Listener) wake() {
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

// Close closes the listener; an Accept waiting for a slot returns net.ErrClosed.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// open is the number of connections open, and of the client at addr.
func (l *Listener) open(addr netip.Addr) (total, client int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.live), l.clients[addr]
}

// ConnState is for http.Server.ConnState: it marks a connection idle between requests (only
// then may it be closed for a newcomer without being stalled).
func ConnState(c net.Conn, state http.ConnState) {
	cc, ok := c.(*Conn)
	if !ok {
		return
	}
	if state != http.StateIdle {
		cc.idleSince.Store(0)
		return
	}
	store(&cc.idleSince, cc.l.o.Now())
	cc.l.wake() // a newcomer waiting at the cap may take its slot now
}

// Conn is one accounted connection.
type Conn struct {
	net.Conn
	l            *Listener
	client       netip.Addr
	closeOnce    sync.Once
	closeErr     error
	writingSince atomic.Int64 // the start of a write still blocked (Unix ns; 0: none): each Write sets it
	idleSince    atomic.Int64 // since when it is idle between requests (Unix ns; 0: not idle)
}

// store and load keep a time in an atomic.Int64, 0 for none: each Write marks its start
// there, so no lock is taken on the write path.
func store(v *atomic.Int64, t time.Time) { v.Store(t.UnixNano()) }

func load(v *atomic.Int64) time.Time {
	if ns := v.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// Client is the connection's peer address (without its port).
func (c *Conn) Client() netip.Addr { return c.client }

// ClientOf is the client a request on c came from, given its X-Forwarded-For values: the
// peer, unless the peer is a trusted proxy; then the rightmost forwarded address that is not
// itself one (each proxy appends the address it heard from), or the peer if none is valid.
func (c *Conn) ClientOf(forwardedFor []string) netip.Addr {
	if !c.l.trusted(c.client) {
		return c.client
	}
	for i := len(forwardedFor) - 1; i >= 0; i-- {
		hops := strings.Split(forwardedFor[i], ",")
		for j := len(hops) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(hops[j]))
			if err != nil {
				return c.client // a hop we cannot read: nothing left of it can be trusted
			}
			if a = a.Unmap(); !c.l.trusted(a) {
				return a
			}
		}
	}
	return c.client
}

// Stalled reports whether a write to c has been blocked for the listener's StalledAfter:
// its client does not read.
func (c *Conn) Stalled() bool { return c.stalledAt(c.l.o.Now(), c.l.o.StalledAfter) }

// StalledSince is when c's blocked write began, zero if it has none.
func (c *Conn) StalledSince() time.Time { return load(&c.writingSince) }

func (c *Conn) stalledAt(now time.Time, after time.Duration) bool {
	since := c.StalledSince()
	return !since.IsZero() && now.Sub(since) >= after
}

// Write marks c as writing until the write returns: a write that stays blocked is a client
// that does not read.
func (c *Conn) Write(p []byte) (int, error) {
	store(&c.writingSince, c.l.o.Now())
	n, err := c.Conn.Write(p)
	c.writingSince.Store(0)
	return n, err
}

// Close closes c once and frees its slot.
func (c *Conn) Close() error {
	c.close()
	return c.closeErr
}

// close closes c and frees its slot, reporting whether this call did.
func (c *Conn) close() bool {
	closed := false
	c.closeOnce.Do(func() {
		c.closeErr = c.Conn.Close()
		c.l.release(c)
		closed = true
	})
	return closed
}

type connKey struct{}

// ConnContext is for http.Server.ConnContext: a request's context then carries its
// connection (FromContext).
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if cc, ok := c.(*Conn); ok {
		return context.WithValue(ctx, connKey{}, cc)
	}
	return ctx
}

// FromContext is the connection a request came on, if its server accounts for them.
func FromContext(ctx context.Context) (*Conn, bool) {
	c, ok := ctx.Value(connKey{}).(*Conn)
	return c, ok
}

// clientOf is c's peer address, unmapped (an IPv4 client over IPv6 counts as itself).
func clientOf(c net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}
