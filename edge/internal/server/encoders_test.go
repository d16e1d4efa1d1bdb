package server

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/conns"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
)

// slowReaders opens n connections to addr, each from its own loopback address (127.0.0.first
// on), or all from one when first is negative, and on each pipelines requests for a large
// page with a nonce, compressed, and never reads: each holds an encoder once its response
// fills the socket's buffers. With forwarded, each connection's requests say they are
// forwarded for a client of its own (X-Forwarded-For: 203.0.113.i).
func slowReaders(t *testing.T, addr string, n, first int, forwarded bool) {
	t.Helper()
	for i := range n {
		req := "GET / HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\nX-Test-Nonce: slow\r\n"
		if forwarded {
			req += fmt.Sprintf("X-Forwarded-For: 203.0.113.%d\r\n", i+1)
		}
		req += "\r\n"
		from := "127.0.0.200"
		if first >= 0 {
			from = fmt.Sprintf("127.0.0.%d", first+i)
		}
		// A small receive window: the server's writes block after a few of its buffers.
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Control: func(_, _ string, rc syscall.RawConn) error {
			return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		go c.Write([]byte(strings.Repeat(req, 400)))
	}
}

// stalledHolders is how many encoders are held by responses whose client stopped reading.
func stalledHolders() (held, stalled int) {
	encoders.mu.Lock()
	defer encoders.mu.Unlock()
	for h := range encoders.held {
		held++
		if h.conn != nil && h.conn.Stalled() {
			stalled++
		}
	}
	return held, stalled
}

// serveAccounted serves s's handler over a conns.Listener, as ListenAndServe does, trusting
// the proxies at trusted. Its cleanup returns once no handler of it can take an encoder
// any more: srv.Close does not wait for them, and a request its slow readers had pipelined,
// answered after the next test began, would hold a 17th encoder there and take one of
// that test's back.
func serveAccounted(t *testing.T, h http.Handler, trusted ...netip.Prefix) string {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := conns.Listen(smallSendBuffers{inner}, conns.Options{Max: 1000, StalledAfter: 50 * time.Millisecond, Trusted: trusted})
	var active atomic.Int64
	var closed atomic.Bool
	served := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		active.Add(1)
		defer active.Add(-1)
		if !closed.Load() {
			h.ServeHTTP(w, r)
		}
	})
	srv := &http.Server{Handler: served, ConnContext: conns.ConnContext, ConnState: conns.ConnState, WriteTimeout: time.Minute}
	go srv.Serve(ln)
	t.Cleanup(func() {
		closed.Store(true)
		srv.Close()
		poll.Until(t, "the server's handlers returned", func() bool { return active.Load() == 0 })
	})
	return ln.Addr().String()
}

// smallSendBuffers gives each connection a small send buffer: a response to a client that
// does not read blocks after a few KB, not after the megabytes the kernel would buffer.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

// TestSlowReadersDoNotTurnCompressionOffForOthers: clients that never read their responses
// hold encoders (16 sockets once held them all, and every other client got pages
// uncompressed until write_timeout). A client holds at most its share, and a response that
// finds every encoder held takes one back from the client that stopped reading longest ago.
func TestSlowReadersDoNotTurnCompressionOffForOthers(t *testing.T) {
	proxy := netip.MustParsePrefix("127.0.0.200/32")
	for _, tc := range []struct {
		name       string
		first      int  // each from its own address from 127.0.0.first, or -1: all from 127.0.0.200
		forwarded  bool // 127.0.0.200 is a trusted proxy, and each connection a client of its own
		wantHeld   int
		reclaimed  float64
		perClient  float64
		slowClient string // one more request from this address: its answer's Content-Encoding
		wantSlow   string
	}{
		{"16 from one address hold their share", -1, false, maxStreamEncodersPerClient, 0, 1, "127.0.0.200", ""},
		{"16 from 16 addresses hold them all, one is taken back", 10, false, maxStreamEncoders, 1, 0, "", ""},
		{"16 clients through a trusted proxy hold them all, one is taken back", -1, true, maxStreamEncoders, 1, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			encodersFree(t)
			s := noncedStack(t, 256<<10)
			var trusted []netip.Prefix
			if tc.forwarded {
				trusted = append(trusted, proxy)
			}
			addr := serveAccounted(t, s.handler, trusted...)
			reclaimed := testutil.ToFloat64(encodersReclaimed)
			perClient := testutil.ToFloat64(encodersRefused.WithLabelValues(encoderRefusedPerClient))
			slowReaders(t, addr, 16, tc.first, tc.forwarded)
			poll.Until(t, "the slow readers' responses to stall", func() bool {
				held, stalled := stalledHolders()
				return held == tc.wantHeld && stalled == tc.wantHeld
			})
			if tc.slowClient != "" {
				// One more from the slow readers' address: past its share, and its own
				// stalled connections are not the newcomer's to take (they are the same
				// client's), so it goes uncompressed.
				d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(tc.slowClient)}}
				client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableCompression: true}}
				req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
				req.Header.Set("Accept-Encoding", "gzip")
				req.Header.Set("X-Test-Nonce", "n0nce")
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if got := resp.Header.Get("Content-Encoding"); got != tc.wantSlow {
					t.Errorf("the slow readers' address, once more: Content-Encoding %q, want %q", got, tc.wantSlow)
				}
			}
			resp, body := getWith(t, "http://"+addr+"/", map[string]string{"Accept-Encoding": "gzip", "X-Test-Nonce": "n0nce"})
			if resp.Header.Get("Content-Encoding") != "gzip" || len(body) > 128<<10 {
				t.Errorf("a client that reads: Content-Encoding %q, %d bytes; want gzip", resp.Header.Get("Content-Encoding"), len(body))
			}
			if got := testutil.ToFloat64(encodersReclaimed) - reclaimed; got != tc.reclaimed {
				t.Errorf("encoders taken back: %v, want %v", got, tc.reclaimed)
			}
			if got := testutil.ToFloat64(encodersRefused.WithLabelValues(encoderRefusedPerClient)) - perClient; got < tc.perClient {
				t.Errorf("refused per client: %v, want at least %v", got, tc.perClient)
			}
		})
	}
}

// encodersFree waits until no response holds an encoder: the holds are the process's, and a
// test's closed connections give theirs back as their handlers return.
func encodersFree(t *testing.T) {
	t.Helper()
	poll.Until(t, "every encoder given back", func() bool {
		encoders.mu.Lock()
		defer encoders.mu.Unlock()
		return len(encoders.held) == 0
	})
}
