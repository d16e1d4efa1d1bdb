package sharedcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache/redistest"
)

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
	s := newStore(t, redistest.Start(t), time.Second)
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
	s := newStore(t, redistest.Start(t), time.Second)
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
	address := redistest.Start(t)
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

// A store that is not there fails the calls, and then costs nothing: the circuit opens.
func TestAbsentStoreFailsFastThenNotAtAll(t *testing.T) {
	s := newStore(t, "unix://"+filepath.Join(t.TempDir(), "nobody.sock"), 50*time.Millisecond)
	ctx := context.Background()
	for i := range 3 {
		if _, err := s.Get(ctx, "k"); err == nil || errors.Is(err, ErrUnavailable) {
			t.Fatalf("call %d: got %v, want a connection error", i, err)
		}
	}
	if _, err := s.Get(ctx, "k"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("after 3 failures: got %v, want ErrUnavailable", err)
	}
	if err := s.Set(ctx, &htmlcache.Entry{Key: "k", Status: 200, Bodies: map[string][]byte{"": []byte("x")}, Stored: time.Now(), TTL: time.Minute}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Set with the circuit open: got %v, want ErrUnavailable", err)
	}
}

// A store that is busy (here: DEBUG SLEEP from another client) is given its timeout, no more:
// the call ends with a timeout while the store still sleeps (a call that waited for it would
// get the store's answer, a miss, and no error).
func TestSlowStoreTimesOut(t *testing.T) {
	address := redistest.Start(t)
	s := newStore(t, address, 50*time.Millisecond)
	ctx := context.Background()
	if _, err := s.Get(ctx, "warm"); err != nil { // a connection in the pool
		t.Fatal(err)
	}
	redistest.Busy(t, address, 30*time.Second)
	_, err := s.Get(ctx, "k")
	if err == nil || !strings.Contains(err.Error(), "timeout") && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want a timeout", err)
	}
}

// A purge removes every variant it names from the store and reaches every replica.
func TestPurgeReachesTheStoreAndEveryReplica(t *testing.T) {
	address := redistest.Start(t)
	a, b := newStore(t, address, time.Second), newStore(t, address, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	heard := make(chan Purge, 10)
	go b.Subscribe(ctx, func(p Purge) { heard <- p })
	doc := func(key, path string, tags ...string) *htmlcache.Entry {
		return &htmlcache.Entry{Key: key, Path: path, Tags: tags, Status: 200, Bodies: map[string][]byte{"": []byte(key)}, Stored: time.Now(), TTL: time.Minute}
	}
	for _, e := range []*htmlcache.Entry{
		doc("b1 GET /products/{id} /products/7 currency=EUR", "/products/7"),
		doc("b1 GET /products/{id} /products/7 currency=USD", "/products/7"),
		doc("b1 GET /products/{id} /products/8*", "/products/8*"),
		doc("b1 GET /about /about", "/about"),
		doc("b1 GET /{$} /", "/", "product:9", "home"),
		doc("b1 GET /products/{id} /products/9", "/products/9", "product:9"),
	} {
		if err := a.Set(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	redistest.Subscribed(t, address, "ssr:purges", 1)
	for _, tc := range []struct {
		purge Purge
		want  int
	}{
		{Purge{"tag", "product:9"}, 2},
		{Purge{"path", "/products/7"}, 2},
		{Purge{"prefix", "/products/"}, 1}, // the glob characters in /products/8* match themselves
		{Purge{"prefix", "/nothing"}, 0},
		{Purge{"key", "b1 GET /about /about"}, 1},
	} {
		n, err := a.Purge(ctx, tc.purge)
		if err != nil || n != tc.want {
			t.Errorf("%+v: purged %d (%v), want %d", tc.purge, n, err, tc.want)
		}
		select {
		case p := <-heard:
			if p != tc.purge {
				t.Errorf("replica b heard %+v, want %+v", p, tc.purge)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("replica b did not hear %+v", tc.purge)
		}
	}
	if keys, _ := a.rdb.Keys(ctx, "ssr:doc:*").Result(); len(keys) != 0 {
		t.Errorf("documents left after purging them all: %v", keys)
	}
}

// A full store (maxmemory reached, no eviction) refuses writes: Set says so, reads go on.
func TestFullStoreRefusesWritesAndStillReads(t *testing.T) {
	address, _ := redistest.StartStoppable(t, "--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
	s := newStore(t, address, time.Second)
	ctx := context.Background()
	small := &htmlcache.Entry{Key: "small", Path: "/s", Status: 200, Bodies: map[string][]byte{"": []byte("x")}, Stored: time.Now(), TTL: time.Minute}
	if err := s.Set(ctx, small); err != nil {
		t.Fatal(err)
	}
	var err error
	for i := 0; i < 50 && err == nil; i++ {
		err = s.Set(ctx, &htmlcache.Entry{Key: fmt.Sprint("big", i), Path: "/b", Status: 200, Bodies: map[string][]byte{"": make([]byte, 256<<10)}, Stored: time.Now(), TTL: time.Minute})
	}
	if err == nil { // Redis refuses the transaction (EXECABORT, after its OOM error)
		t.Fatal("writing 12 MB into a 2 MB store with noeviction: no error")
	}
	if got, err := s.Get(ctx, "small"); err != nil || got == nil {
		t.Errorf("reading from the full store: %v, %v", got, err)
	}
}

// TestLargePageHasTimeToBeStored: a write is given the time its bytes take (64 KiB a
// millisecond) on top of the store's round trip, so a large page is not refused, and does
// not count toward opening the circuit, for being large. A pure check: a wall-clock one
// (8 MiB through a real store within 25 ms + 128 ms) measures the host's load instead.
func TestLargePageHasTimeToBeStored(t *testing.T) {
	for _, tt := range []struct {
		bytes int
		want  time.Duration
	}{
		{0, 0},
		{64<<10 - 1, 0},
		{64 << 10, time.Millisecond},
		{8 << 20, 128 * time.Millisecond},
	} {
		if got := transferTime(tt.bytes); got != tt.want {
			t.Errorf("transferTime(%d) = %v, want %v", tt.bytes, got, tt.want)
		}
	}
}
