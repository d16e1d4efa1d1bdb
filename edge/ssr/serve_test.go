package ssr

import (
	"context"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestListenAndServe: the page on the public listener, health on the admin one, readiness
// false once the context ends, and a clean return.
func TestListenAndServe(t *testing.T) {
	f := newFixture(t, Options{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", f.srv.Page("home", PageOptions{}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f.srv.ListenAndServe(ctx, f.srv.ServeMux(mux), AdminOptions{}) }()
	public, admin := listening(t, f, "public"), listening(t, f, "admin")

	if res := get(t, "http://"+public+"/"); res.StatusCode != http.StatusOK || res.Header.Get("X-SSR-Fallback") != "" {
		t.Fatalf("page: got %d %v", res.StatusCode, res.Header)
	}
	if res := get(t, "http://"+admin+"/healthz"); res.StatusCode != http.StatusOK {
		t.Fatalf("healthz: got %d", res.StatusCode)
	}
	if res := get(t, "http://"+public+"/healthz"); res.StatusCode != http.StatusNotFound {
		t.Fatalf("healthz on the public listener: got %d, want 404", res.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ListenAndServe returned %v after its context ended", err)
	}
}

// TestListenAndServeNamesTheOption: an address it cannot listen on is named by its field.
func TestListenAndServeNamesTheOption(t *testing.T) {
	f := newFixture(t, Options{Listen: "127.0.0.1:0", AdminListen: "256.0.0.1:1"})
	err := f.srv.ListenAndServe(context.Background(), http.NewServeMux(), AdminOptions{})
	if err == nil || !strings.HasPrefix(err.Error(), "ssr: Options.AdminListen: ") {
		t.Fatalf("got %v, want an error naming Options.AdminListen", err)
	}
}

// TestListenAndServeErrorUnwraps: the cause stays reachable under the option's name.
func TestListenAndServeErrorUnwraps(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	f := newFixture(t, Options{Listen: taken.Addr().String(), AdminListen: "127.0.0.1:0"})
	err = f.srv.ListenAndServe(context.Background(), http.NewServeMux(), AdminOptions{})
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.HasPrefix(err.Error(), "ssr: Options.Listen: ") {
		t.Fatalf("got %v, want an error naming Options.Listen that is syscall.EADDRINUSE", err)
	}
}

var listeningAt = regexp.MustCompile(`msg=listening listener=(\w+) address=(\S+)`)

// listening waits for the listener's log line and returns its address.
func listening(t *testing.T, f *fixture, name string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, m := range listeningAt.FindAllStringSubmatch(f.logs.String(), -1) {
			if m[1] == name {
				return m[2]
			}
		}
	}
	t.Fatalf("no %s listener in the log:\n%s", name, f.logs.String())
	return ""
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
