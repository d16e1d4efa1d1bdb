package site

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
)

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

// TestServeLeavesNoListenerAlone: when the admin address cannot be bound, Serve fails
// naming it, and the public listener it had opened is closed, not left serving.
func TestServeLeavesNoListenerAlone(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	public := freeAddress(t)
	s := &Site{log: slog.New(slog.NewTextHandler(io.Discard, nil)), e: config.Edge{
		Listen: public, AdminListen: taken.Addr().String(), MaxConnections: 8, MaxHeaderBytes: 4096,
		ReadHeaderTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, IdleTimeout: time.Second,
	}}
	err = s.Serve(context.Background(), http.NotFoundHandler(), http.NotFoundHandler(), new(atomic.Bool))
	if err == nil || !strings.Contains(err.Error(), "edge.admin_listen") {
		t.Fatalf("got %v, want an error naming edge.admin_listen", err)
	}
	ln, err := net.Listen("tcp", public)
	if err != nil {
		t.Fatalf("the public address is still taken after Serve failed: %v", err)
	}
	ln.Close()
}

// TestServeCapsConnections: past edge.max_connections a new connection is not served until
// one closes.
func TestServeCapsConnections(t *testing.T) {
	public := freeAddress(t)
	s := &Site{log: slog.New(slog.NewTextHandler(io.Discard, nil)), e: config.Edge{
		Listen: public, AdminListen: freeAddress(t), MaxConnections: 1, MaxHeaderBytes: 4096,
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: 10 * time.Second,
	}}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- s.Serve(ctx, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
			http.NotFoundHandler(), new(atomic.Bool))
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	}()
	var first net.Conn
	for deadline := time.Now().Add(10 * time.Second); first == nil; time.Sleep(10 * time.Millisecond) {
		if first, _ = net.Dial("tcp", public); first == nil && time.Now().After(deadline) {
			t.Fatal("the public listener never came up")
		}
	}
	// The first connection is accepted and held open (keep-alive, idle).
	io.WriteString(first, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if !strings.Contains(readSome(t, first), "ok") {
		t.Fatal("the first connection was not served")
	}
	second, err := net.Dial("tcp", public) // the kernel's backlog takes it
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	io.WriteString(second, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	second.SetReadDeadline(time.Now().Add(300 * time.Millisecond)) // a bound on a wait for nothing
	if n, _ := second.Read(make([]byte, 1)); n != 0 {
		t.Fatal("a second connection was served while the first held the only one")
	}
	first.Close()
	second.SetReadDeadline(time.Time{})
	if !strings.Contains(readSome(t, second), "ok") {
		t.Error("the second connection was not served once the first closed")
	}
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
