package server

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/conns"
)

// maxStreamEncoders bounds the responses compressed as they are sent at once (stored pages
// with a nonce, streamed pages): about 16 MB of encoders, part of the edge's 64 MiB for its
// runtime and connections (deploy/k8s/README.md, "Sizing"). A response holds its encoder for
// as long as its client takes to read it, so one client holds at most
// maxStreamEncodersPerClient of them, and a client that stops reading loses its encoder
// (its connection) to the next response that needs one: 16 sockets that never read once
// held them all, and every other client got its pages uncompressed until write_timeout.
const (
	maxStreamEncoders          = 16
	maxStreamEncodersPerClient = maxStreamEncoders / 4
	// reclaimWait bounds how long a response waits for the encoder of a connection closed
	// for it (its handler must see its write fail and return); past it, it goes uncompressed.
	reclaimWait = 100 * time.Millisecond
)

// Why a response that could be compressed was not (edge_encoders_refused_total).
const (
	encoderRefusedPerClient = "per-client"
	encoderRefusedBusy      = "busy"
)

// The encoders are the process's, whichever Server holds them: so are their metrics,
// registered on each Server's registry.
var (
	encoders        = &encoderHolds{held: map[*encoderHold]struct{}{}, clients: map[netip.Addr]int{}, freed: make(chan struct{}, 1)}
	encodersRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "edge_encoders_refused_total",
		Help: "Responses sent uncompressed although their client accepts a coding, because no live encoder was left for them: per-client (their client holds its share) or busy (every encoder held by clients that read).",
	}, []string{"reason"})
	encodersReclaimed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "edge_encoders_reclaimed_total",
		Help: "Connections closed to take back their encoder for another response: their client had stopped reading.",
	})
)

// encoderHolds are the live encoders' holders.
type encoderHolds struct {
	mu      sync.Mutex
	held    map[*encoderHold]struct{} // guarded by mu
	clients map[netip.Addr]int        // encoders held per client, guarded by mu
	freed   chan struct{}             // an encoder freed; capacity 1, never blocks a sender
}

// encoderHold is one response's encoder: its client, and its connection when its server
// accounts for them (conns), which can then be closed to take the encoder back.
type encoderHold struct {
	client netip.Addr
	conn   *conns.Conn
}

// take reserves an encoder for r's response, or says why not: its client holds its share,
// or every encoder is held by clients that read. With every encoder held, the response whose
// client stopped reading longest ago loses its connection, and its encoder is this one's.
func (e *encoderHolds) take(r *http.Request) (release func(), refused string) {
	h := &encoderHold{client: requestClient(r)}
	h.conn, _ = conns.FromContext(r.Context())
	var until time.Time // set once a connection was closed for this response
	for {
		e.mu.Lock()
		if e.clients[h.client] >= maxStreamEncodersPerClient {
			e.mu.Unlock()
			return refuse(encoderRefusedPerClient)
		}
		if len(e.held) < maxStreamEncoders {
			e.held[h] = struct{}{}
			e.clients[h.client]++
			e.mu.Unlock()
			return func() { e.release(h) }, ""
		}
		var victim *encoderHold
		if until.IsZero() {
			victim = e.stalestLocked()
		}
		e.mu.Unlock()
		if until.IsZero() {
			if victim == nil {
				return refuse(encoderRefusedBusy)
			}
			if victim.conn.Close() == nil {
				encodersReclaimed.Inc()
			}
			until = time.Now().Add(reclaimWait)
		}
		// Its handler gives the encoder back once it sees its writes fail; another
		// response may take it first, and a wake-up may be an older release's.
		wait := time.Until(until)
		if wait <= 0 {
			return refuse(encoderRefusedBusy)
		}
		timer := time.NewTimer(wait)
		select {
		case <-e.freed:
		case <-timer.C:
		}
		timer.Stop()
	}
}

func refuse(reason string) (func(), string) {
	encodersRefused.WithLabelValues(reason).Inc()
	return nil, reason
}

// stalestLocked is the holder whose connection stopped reading longest ago, or nil.
func (e *encoderHolds) stalestLocked() *encoderHold {
	var stalest *encoderHold
	var since time.Time
	for h := range e.held {
		if h.conn == nil || !h.conn.Stalled() {
			continue
		}
		if s := h.conn.StalledSince(); stalest == nil || s.Before(since) {
			stalest, since = h, s
		}
	}
	return stalest
}

func (e *encoderHolds) release(h *encoderHold) {
	e.mu.Lock()
	delete(e.held, h)
	if e.clients[h.client]--; e.clients[h.client] <= 0 {
		delete(e.clients, h.client)
	}
	e.mu.Unlock()
	select {
	case e.freed <- struct{}{}:
	default:
	}
}

// requestClient is the address r came from: its connection's peer, or the client a trusted
// proxy forwarded it for.
func requestClient(r *http.Request) netip.Addr {
	if c, ok := conns.FromContext(r.Context()); ok {
		return c.ClientOf(r.Header.Values("X-Forwarded-For"))
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}
