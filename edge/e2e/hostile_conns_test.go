package e2e

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
)

// nonReaders opens n connections to addr from the loopback address from, each with a small
// receive window, pipelining requests for a cached page and never reading its answers.
func nonReaders(t *testing.T, addr, from string, n int) {
	t.Helper()
	req := strings.Repeat("GET /cached/products/1 HTTP/1.1\r\nHost: x\r\n\r\n", 2000)
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		go c.Write([]byte(req))
	}
}

// TestNonReadingConnectionsLeaveRoomForOthers: connections that pipeline requests and never
// read hold their slots only while nobody else needs them. About 1,030 from one host once
// took the public listener down (edge.max_connections counted every client together, each
// slow connection held its slot for write_timeout): a normal client timed out after 5 s. One
// address now holds at most its share (edge.max_connections_per_client) and its newcomers
// past it are refused; at the listener's cap, a newcomer takes the slot of the connection
// whose client stopped reading longest ago.
func TestNonReadingConnectionsLeaveRoomForOthers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     []string
		from    []string // each opens n
		n       int
		reasons []string // edge_connections_closed_total's reasons the attack met
		atLeast float64  // at least this many of them
	}{
		// Past its share, each newcomer of the address closes one of its own stalled or
		// idle connections, or is refused.
		{"1,030 from one address: no more than its share", nil, []string{"127.0.0.1"}, 1030, []string{"per-client", "stalled", "idle"}, 1030 - 256},
		{"2 x 55 over a cap of 100: the stalest go first", []string{"SSR_EDGE_MAX_CONNECTIONS=100", "SSR_EDGE_MAX_CONNECTIONS_PER_CLIENT=100"},
			[]string{"127.0.0.1", "127.0.0.3"}, 55, []string{"stalled"}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			socket := t.TempDir() + "/renderer.sock"
			startRenderer(t, socket)
			edge := startEdge(t, socket, tc.env...)
			if r := harness.Get(t, edge.url+"/cached/products/1"); r.StatusCode != 200 {
				t.Fatalf("warm-up: %d", r.StatusCode)
			}
			for _, from := range tc.from {
				nonReaders(t, strings.TrimPrefix(edge.url, "http://"), from, tc.n)
			}
			closed := func() (n float64) {
				samples := scrape(t, edge.admin+"/metrics")
				for _, reason := range tc.reasons {
					n += samples[fmt.Sprintf(`edge_connections_closed_total{reason=%q}`, reason)]
				}
				return n
			}
			poll.Until(t, fmt.Sprintf("%v connections closed as %v", tc.atLeast, tc.reasons), func() bool { return closed() >= tc.atLeast })
			// A client at another address, within the 5 s it once waited in vain. Its deadline
			// bounds a failing test; a served one answers in milliseconds.
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
			resp, err := client.Get(edge.url + "/cached/products/1")
			if err != nil {
				t.Fatalf("a normal client beside them: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("a normal client beside them: %d", resp.StatusCode)
			}
		})
	}
}
