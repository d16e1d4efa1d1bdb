package ssr

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/conns"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/server"
)

// TestListenAndServe: the page on the public listener, health on the admin one, readiness
// false once the context ends, and a clean return.
func TestListenAndServe(t *testing.T) {
	f := newFixture(t, Options{})
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", f.srv.Page("home", PageOptions{}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	public := &http.Server{Addr: "127.0.0.1:0", Handler: f.srv.Wrap(mux)}
	go func() { done <- f.srv.ListenAndServe(ctx, public, ServeOptions{AdminAddr: "127.0.0.1:0"}) }()
	publicAddr, admin := listening(t, f, "public"), listening(t, f, "admin")

	if res := get(t, "http://"+publicAddr+"/"); res.StatusCode != http.StatusOK || res.Header.Get("X-SSR-Fallback") != "" {
		t.Fatalf("page: got %d %v", res.StatusCode, res.Header)
	}
	if res := get(t, "http://"+admin+"/healthz"); res.StatusCode != http.StatusOK {
		t.Fatalf("healthz: got %d", res.StatusCode)
	}
	if res := get(t, "http://"+publicAddr+"/healthz"); res.StatusCode != http.StatusNotFound {
		t.Fatalf("healthz on the public listener: got %d, want 404", res.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ListenAndServe returned %v after its context ended", err)
	}
}

// TestListenAndServeNamesTheOption: an address it cannot listen on is named by its field.
func TestListenAndServeNamesTheOption(t *testing.T) {
	f := newFixture(t, Options{})
	err := f.srv.ListenAndServe(context.Background(), &http.Server{Addr: "127.0.0.1:0"}, ServeOptions{AdminAddr: "256.0.0.1:1"})
	if err == nil || !strings.HasPrefix(err.Error(), "ssr: ServeOptions.AdminAddr cannot be listened on: ") {
		t.Fatalf("got %v, want an error naming ServeOptions.AdminAddr", err)
	}
}

// TestListenAndServeErrorUnwraps: the cause stays reachable under the option's name.
func TestListenAndServeErrorUnwraps(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	f := newFixture(t, Options{})
	err = f.srv.ListenAndServe(context.Background(), &http.Server{Addr: taken.Addr().String()}, ServeOptions{AdminAddr: "127.0.0.1:0"})
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.HasPrefix(err.Error(), "ssr: http.Server.Addr cannot be listened on: ") {
		t.Fatalf("got %v, want an error naming the public server's Addr that is syscall.EADDRINUSE", err)
	}
}

var listeningAt = regexp.MustCompile(`msg=listening listener=(\w+) address=(\S+)`)

// listening waits for the listener's log line and returns its address.
func listening(t *testing.T, f *fixture, name string) string {
	t.Helper()
	var addr string
	poll.Until(t, "the "+name+" listener's log line", func() bool {
		for _, m := range listeningAt.FindAllStringSubmatch(f.logs.String(), -1) {
			if m[1] == name {
				addr = m[2]
			}
		}
		return addr != ""
	})
	return addr
}

// TestServeLeavesNoListenerAlone: when the admin address cannot be bound, ListenAndServe
// fails naming it, and the public listener it had opened is closed, not left serving.
func TestServeLeavesNoListenerAlone(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	public := freeAddress(t)
	s := &Server{log: slog.New(slog.DiscardHandler), metrics: server.NewMetrics(prometheus.NewRegistry())}
	err = s.ListenAndServe(context.Background(), &http.Server{Addr: public}, ServeOptions{AdminAddr: taken.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), "ServeOptions.AdminAddr") {
		t.Fatalf("got %v, want an error naming ServeOptions.AdminAddr", err)
	}
	ln, err := net.Listen("tcp", public)
	if err != nil {
		t.Fatalf("the public address is still taken after ListenAndServe failed: %v", err)
	}
	ln.Close()
}

// freeAddress is a loopback address nothing listens on, as the kernel gave it.
func freeAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func get(t *testing.T, url string) *http.Response {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// TestServeCapsConnections: past ServeOptions.MaxConnections a newcomer takes the slot of a
// keep-alive connection idle between requests (closed, counted); a connection busy with a
// request keeps its slot, and the newcomer waits until it is idle.
func TestServeCapsConnections(t *testing.T) {
	public := freeAddress(t)
	reg := prometheus.NewRegistry()
	s := &Server{log: slog.New(slog.DiscardHandler), metrics: server.NewMetrics(reg)}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	gate := make(chan struct{})
	go func() {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/gate" {
				<-gate
			}
			io.WriteString(w, "ok")
		})
		served <- s.ListenAndServe(ctx, &http.Server{Addr: public, Handler: h}, ServeOptions{AdminAddr: freeAddress(t), MaxConnections: 1, MaxConnectionsPerClient: 2})
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	}()
	var first net.Conn
	poll.Until(t, "the public listener", func() bool {
		first, _ = net.Dial("tcp", public)
		return first != nil
	})
	defer first.Close()
	// A request in progress on the only slot: the newcomer is not served meanwhile.
	io.WriteString(first, "GET /gate HTTP/1.1\r\nHost: x\r\n\r\n")
	second, err := net.Dial("tcp", public) // the kernel's backlog takes it
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	io.WriteString(second, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	second.SetReadDeadline(time.Now().Add(300 * time.Millisecond)) // a bound on a wait for nothing
	if n, _ := second.Read(make([]byte, 1)); n != 0 {
		t.Fatal("a second connection was served while the first's request held the only slot")
	}
	// Answered, the first is idle: the newcomer takes its slot.
	close(gate)
	if !strings.Contains(readSome(t, first), "ok") {
		t.Fatal("the first connection was not served")
	}
	second.SetReadDeadline(time.Time{})
	if !strings.Contains(readSome(t, second), "ok") {
		t.Error("the second connection was not served once the first was idle")
	}
	for reason, want := range map[string]float64{conns.ReasonIdle: 1, conns.ReasonStalled: 0, conns.ReasonPerClient: 0} {
		if got := closedFor(t, reg, reason); got != want {
			t.Errorf("edge_connections_closed_total{reason=%q}: %v, want %v", reason, got, want)
		}
	}
}

// closedFor is edge_connections_closed_total{reason} in reg.
func closedFor(t *testing.T, reg prometheus.Gatherer, reason string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "edge_connections_closed_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no edge_connections_closed_total{reason=%q}", reason)
	return 0
}

func readSome(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, 4096)
	n, err := c.Read(b)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b[:n])
}

// TestOneServerStoppingStopsTheOther: when the public server stops (here closed by its
// owner), ListenAndServe closes the admin server too and returns why: no listener is left
// serving alone, a readiness probe without the pages nor pages without their probe.
func TestOneServerStoppingStopsTheOther(t *testing.T) {
	f := newFixture(t, Options{})
	adminAddr := freeAddress(t)
	public := &http.Server{Addr: "127.0.0.1:0", Handler: http.NotFoundHandler()}
	done := make(chan error, 1)
	go func() { done <- f.srv.ListenAndServe(context.Background(), public, ServeOptions{AdminAddr: adminAddr}) }()
	listening(t, f, "admin")
	public.Close()
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("got %v, want the public server's http.ErrServerClosed", err)
	}
	ln, err := net.Listen("tcp", adminAddr)
	if err != nil {
		t.Fatalf("the admin address is still taken after the public server stopped: %v", err)
	}
	ln.Close()
}
