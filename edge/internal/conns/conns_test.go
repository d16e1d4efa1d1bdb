package conns

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// rig is a Listener on loopback, the clients' ends of its connections, and what it closed.
type rig struct {
	t      *testing.T
	l      *Listener
	clock  *fakeClock
	mu     sync.Mutex
	closed map[string]int
	accept chan *Conn
}

func newRig(t *testing.T, o Options) *rig {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, clock: &fakeClock{now: time.Unix(1000, 0)}, closed: map[string]int{}, accept: make(chan *Conn, 64)}
	o.Now = r.clock.Now
	o.Closed = func(reason string) {
		r.mu.Lock()
		r.closed[reason]++
		r.mu.Unlock()
	}
	r.l = Listen(inner, o)
	go func() {
		for {
			c, err := r.l.Accept()
			if err != nil {
				close(r.accept)
				return
			}
			r.accept <- c.(*Conn)
		}
	}()
	t.Cleanup(func() { r.l.Close() })
	return r
}

// dial connects from the loopback address from (127.0.0.x: each its own client) and returns
// the client's end and, once accepted, the server's.
func (r *rig) dial(from string) (net.Conn, *Conn) {
	r.t.Helper()
	client := r.dialOnly(from)
	select {
	case c := <-r.accept:
		return client, c
	case <-time.After(10 * time.Second):
		r.t.Fatalf("a connection from %s was never accepted", from)
		return nil, nil
	}
}

func (r *rig) dialOnly(from string) net.Conn {
	r.t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	client, err := d.Dial("tcp", r.l.Addr().String())
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { client.Close() })
	return client
}

// stall makes c's server end write until blocked: its client never reads. It returns once
// the write has begun.
func (r *rig) stall(c *Conn) {
	r.t.Helper()
	go c.Write(bytes.Repeat([]byte("x"), 64<<20))
	poll.Until(r.t, "a write to begin", func() bool { return !c.StalledSince().IsZero() })
}

func (r *rig) count(reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed[reason]
}

// closedByServer reports whether the server closed c's client end (it reads EOF or a reset
// once what was written is drained).
func closedByServer(t *testing.T, client net.Conn) bool {
	t.Helper()
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, client)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// TestAtTheCapTheStalestNonReaderGoes: a newcomer at the cap takes the slot of the connection
// whose client stopped reading longest ago, not a reading client's, and the newcomer is not
// refused.
func TestAtTheCapTheStalestNonReaderGoes(t *testing.T) {
	r := newRig(t, Options{Max: 3, PerClient: 3})
	_, reading := r.dial("127.0.0.2")
	stalestClient, stalest := r.dial("127.0.0.3")
	_, later := r.dial("127.0.0.4")
	r.stall(stalest)
	r.clock.advance(time.Second)
	r.stall(later)
	r.clock.advance(time.Second) // stalest 2 s, later 1 s: both past StalledAfter's 1 s

	newClient, newcomer := r.dial("127.0.0.5")
	if !closedByServer(t, stalestClient) {
		t.Error("the stalest non-reading connection is still open")
	}
	if got := r.count(ReasonStalled); got != 1 {
		t.Errorf("closed as stalled: %d, want 1", got)
	}
	if total, _ := r.l.open(netip.Addr{}); total != 3 {
		t.Errorf("open: %d, want 3", total)
	}
	// The reading client and the newcomer are served.
	for _, c := range []struct {
		client net.Conn
		server *Conn
	}{{newClient, newcomer}} {
		go c.server.Write([]byte("hello"))
		buf := make([]byte, 5)
		if _, err := io.ReadFull(c.client, buf); err != nil || string(buf) != "hello" {
			t.Errorf("newcomer: %q, %v", buf, err)
		}
	}
	if reading.Stalled() || later.StalledSince().IsZero() {
		t.Error("the reading connection counts as stalled, or the later one lost its write")
	}
}

// TestAtTheCapAnIdleConnectionGoesWhenNoneStalls: with no stalled connection, the one idle
// longest between requests goes; a connection busy with a request stays.
func TestAtTheCapAnIdleConnectionGoesWhenNoneStalls(t *testing.T) {
	r := newRig(t, Options{Max: 2, PerClient: 2})
	idleClient, idle := r.dial("127.0.0.2")
	_, busy := r.dial("127.0.0.3")
	ConnState(idle, http.StateIdle)
	ConnState(busy, http.StateActive)
	r.clock.advance(time.Second) // idle for StalledAfter: not a moment between two requests
	r.dial("127.0.0.4")
	if !closedByServer(t, idleClient) {
		t.Error("the idle connection is still open")
	}
	if got := r.count(ReasonIdle); got != 1 {
		t.Errorf("closed as idle: %d, want 1", got)
	}
}

// TestAtTheCapWithNoneToCloseTheNewcomerWaits: every connection reads and is busy: the
// newcomer waits for a slot, as with netutil.LimitListener, and gets the first freed.
func TestAtTheCapWithNoneToCloseTheNewcomerWaits(t *testing.T) {
	r := newRig(t, Options{Max: 1, PerClient: 1})
	_, busy := r.dial("127.0.0.2")
	ConnState(busy, http.StateActive)
	r.dialOnly("127.0.0.3")
	select {
	case <-r.accept:
		t.Fatal("a newcomer was accepted past the cap with nobody to close")
	default:
	}
	busy.Close()
	select {
	case <-r.accept:
	case <-time.After(10 * time.Second):
		t.Fatal("the newcomer did not get the freed slot")
	}
	if r.count(ReasonIdle)+r.count(ReasonStalled)+r.count(ReasonPerClient) != 0 {
		t.Errorf("closed for it: %v", r.closed)
	}
}

// TestPerClient: a client at its bound loses its own stalest non-reading connection to its
// newcomer, or, reading them all, has the newcomer refused; another client is not bounded
// by it, nor is an exempt (trusted proxy's) address.
func TestPerClient(t *testing.T) {
	exempt := netip.MustParseAddr("127.0.0.9")
	r := newRig(t, Options{Max: 100, PerClient: 2, Trusted: []netip.Prefix{netip.PrefixFrom(exempt, 32)}})
	r.dial("127.0.0.2")
	stalledClient, stalled := r.dial("127.0.0.2")
	r.stall(stalled)
	r.clock.advance(2 * time.Second)
	r.dial("127.0.0.2") // takes the stalled one's slot
	if !closedByServer(t, stalledClient) {
		t.Error("the client's stalled connection is still open")
	}
	refused := r.dialOnly("127.0.0.2") // both its connections read: refused
	if !closedByServer(t, refused) {
		t.Error("a connection past the client's bound was not refused")
	}
	if got := r.count(ReasonPerClient); got != 1 {
		t.Errorf("refused per client: %d, want 1", got)
	}
	r.dial("127.0.0.3")
	for range 5 {
		r.dial("127.0.0.9")
	}
	if _, n := r.l.open(exempt); n != 5 {
		t.Errorf("the exempt address holds %d connections, want 5", n)
	}
}

// TestCloseWakesAWaitingAccept: a listener closed while a newcomer waits for a slot.
func TestCloseWakesAWaitingAccept(t *testing.T) {
	r := newRig(t, Options{Max: 1})
	_, busy := r.dial("127.0.0.2")
	ConnState(busy, http.StateActive)
	r.dialOnly("127.0.0.3")
	var accepted atomic.Bool
	r.l.Close()
	for c := range r.accept {
		if c != nil {
			accepted.Store(true)
		}
	}
	if accepted.Load() {
		t.Error("a connection was accepted past the cap after Close")
	}
}

// TestClientOf: a request's client is its connection's peer, or, on a trusted proxy's
// connection, the rightmost X-Forwarded-For address that is not itself a trusted proxy.
func TestClientOf(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.9/32"), netip.MustParsePrefix("10.0.0.0/8")}
	r := newRig(t, Options{Max: 10, Trusted: trusted})
	_, proxied := r.dial("127.0.0.9")
	_, direct := r.dial("127.0.0.2")
	for _, tc := range []struct {
		name      string
		conn      *Conn
		forwarded []string
		want      string
	}{
		{"a direct client's header is not read", direct, []string{"203.0.113.7"}, "127.0.0.2"},
		{"through the proxy", proxied, []string{"203.0.113.7"}, "203.0.113.7"},
		{"the rightmost untrusted hop", proxied, []string{"198.51.100.1, 203.0.113.7, 10.1.2.3"}, "203.0.113.7"},
		{"over two headers", proxied, []string{"198.51.100.1", "203.0.113.7, 10.1.2.3"}, "203.0.113.7"},
		{"a client cannot hide behind what it writes first", proxied, []string{"10.9.9.9, 203.0.113.7"}, "203.0.113.7"},
		{"an IPv4 client over IPv6", proxied, []string{"::ffff:203.0.113.7"}, "203.0.113.7"},
		{"no header: the proxy", proxied, nil, "127.0.0.9"},
		{"only trusted hops: the proxy", proxied, []string{"10.0.0.1"}, "127.0.0.9"},
		{"an unreadable hop: the proxy", proxied, []string{"203.0.113.7, junk"}, "127.0.0.9"},
	} {
		if got := tc.conn.ClientOf(tc.forwarded); got.String() != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}
