package sharedcache

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
)

// startRedis runs a real redis-server (make installs Debian's) on a unix socket in a temp
// dir, with no persistence, and returns its unix:// address.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is not installed: `make test-go` installs Debian's")
	}
	dir, err := os.MkdirTemp("", "redis-") // a unix socket path is limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", socket, "--save", "", "--appendonly", "no", "--dir", dir,
		"--enable-debug-command", "local") // DEBUG SLEEP plays a busy store
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.RemoveAll(dir)
	})
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(socket); err == nil {
			return "unix://" + socket
		}
	}
	t.Fatalf("redis-server did not listen on %s:\n%s", socket, out.String())
	return ""
}

func newStore(t *testing.T, address string, timeout time.Duration) *Store {
	t.Helper()
	s, err := New(Options{Address: address, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRoundTripAndMiss(t *testing.T) {
	s := newStore(t, startRedis(t), time.Second)
	ctx := context.Background()
	if e, err := s.Get(ctx, "nobody"); e != nil || err != nil {
		t.Fatalf("Get of a missing key: got %v, %v; want nil, nil", e, err)
	}
	stored := time.Now().Truncate(time.Millisecond)
	in := &htmlcache.Entry{
		Key: "b1 GET /{$} /", Path: "/", Status: 200, ETag: `"abc"`,
		Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}},
		Bodies: map[string][]byte{"": []byte("<html>é</html>"), "br": {1, 2, 3}},
		Stored: stored, TTL: time.Minute, StaleWhileRevalidate: time.Minute, StaleIfError: time.Hour,
	}
	if err := s.Set(ctx, in); err != nil {
		t.Fatal(err)
	}
	out, err := s.Get(ctx, in.Key)
	if err != nil || out == nil {
		t.Fatalf("Get: %v, %v", out, err)
	}
	if out.Key != in.Key || out.Path != in.Path || out.Status != 200 || out.ETag != in.ETag || !out.Stored.Equal(stored) ||
		out.TTL != in.TTL || out.StaleWhileRevalidate != in.StaleWhileRevalidate || out.StaleIfError != in.StaleIfError ||
		out.Header.Get("Content-Type") != "text/html; charset=utf-8" || string(out.Bodies[""]) != "<html>é</html>" || !bytes.Equal(out.Bodies["br"], []byte{1, 2, 3}) {
		t.Errorf("got %+v, want %+v", out, in)
	}
	// The store keeps it as long as it is usable at all: TTL plus the longer stale window.
	ttl, err := s.rdb.PTTL(ctx, "ssr:doc:"+in.Key).Result()
	if err != nil || ttl < 60*time.Minute || ttl > 61*time.Minute {
		t.Errorf("expiry %s (%v), want TTL + stale-if-error, about 61 min", ttl, err)
	}
}

func TestMarkersAndSpentEntriesAreNotStored(t *testing.T) {
	s := newStore(t, startRedis(t), time.Second)
	ctx := context.Background()
	for _, e := range []*htmlcache.Entry{
		{Key: "pass", Pass: true, Stored: time.Now(), TTL: time.Minute},
		{Key: "spent", Bodies: map[string][]byte{"": []byte("x")}, Stored: time.Now().Add(-time.Hour), TTL: time.Minute},
	} {
		if err := s.Set(ctx, e); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Get(ctx, e.Key); got != nil {
			t.Errorf("%s: stored, want not stored", e.Key)
		}
	}
}

// Two replicas, one store: only one may render a key at a time, only the holder releases.
func TestOneRenderLockAcrossReplicas(t *testing.T) {
	address := startRedis(t)
	a, b := newStore(t, address, time.Second), newStore(t, address, time.Second)
	ctx := context.Background()
	unlockA, ok, err := a.Lock(ctx, "k")
	if err != nil || !ok {
		t.Fatalf("replica a: got %v, %v; want the lock", ok, err)
	}
	unlockB, ok, err := b.Lock(ctx, "k")
	if err != nil || ok {
		t.Fatalf("replica b while a holds it: got %v, %v; want refused", ok, err)
	}
	unlockB() // not the holder: a no-op
	if _, ok, _ := b.Lock(ctx, "k"); ok {
		t.Fatal("replica b's unlock released a's lock")
	}
	unlockA()
	if _, ok, err := b.Lock(ctx, "k"); err != nil || !ok {
		t.Fatalf("replica b after a released: got %v, %v; want the lock", ok, err)
	}
}

// A store that does not answer costs a call its timeout, and then nothing: the circuit opens.
func TestAbsentStoreFailsFastThenNotAtAll(t *testing.T) {
	s := newStore(t, "unix://"+filepath.Join(t.TempDir(), "nobody.sock"), 50*time.Millisecond)
	ctx := context.Background()
	for i := range 3 {
		began := time.Now()
		if _, err := s.Get(ctx, "k"); err == nil || errors.Is(err, ErrUnavailable) {
			t.Fatalf("call %d: got %v, want a connection error", i, err)
		}
		if took := time.Since(began); took > time.Second {
			t.Fatalf("call %d took %s, want about the 50 ms timeout at most", i, took)
		}
	}
	if _, err := s.Get(ctx, "k"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("after 3 failures: got %v, want ErrUnavailable", err)
	}
	if err := s.Set(ctx, &htmlcache.Entry{Key: "k", Stored: time.Now(), TTL: time.Minute}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Set with the circuit open: got %v, want ErrUnavailable", err)
	}
}

// A store that is busy (here: DEBUG SLEEP from another client) is given its timeout, no more.
func TestSlowStoreTimesOut(t *testing.T) {
	address := startRedis(t)
	s := newStore(t, address, 50*time.Millisecond)
	ctx := context.Background()
	if _, err := s.Get(ctx, "warm"); err != nil { // a connection in the pool
		t.Fatal(err)
	}
	blocker := newStore(t, address, 5*time.Second)
	go blocker.rdb.Do(ctx, "DEBUG", "SLEEP", "1")
	time.Sleep(100 * time.Millisecond) // the server is now busy
	began := time.Now()
	_, err := s.Get(ctx, "k")
	if err == nil || !strings.Contains(err.Error(), "timeout") && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want a timeout", err)
	}
	if took := time.Since(began); took > 500*time.Millisecond {
		t.Errorf("took %s, want about the 50 ms timeout", took)
	}
}
