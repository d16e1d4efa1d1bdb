package sharedcache

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache/redistest"
)

// What a client of the store with its password, and without the signing key, can still do
// to the purge stream (issue 47): write entries of any size, and delete it. These tests do
// so against a real redis-server.

// junkScript writes ARGV[1] entries of ARGV[2] bytes to the stream KEYS[1], and publishes as
// many messages on KEYS[2]: made in the store, so that the test's own allocations stay out
// of the replica's.
const junkScript = `
local x = string.rep('x', tonumber(ARGV[2]))
for i = 1, tonumber(ARGV[1]) do
  redis.call('XADD', KEYS[1], '*', 'm', x)
  redis.call('PUBLISH', KEYS[2], x)
end
return 0`

// junkWriter is admin with no read timeout short of poll.Within: junkScript takes the store
// seconds.
func junkWriter(t *testing.T, address string) *redis.Client {
	t.Helper()
	o, err := redis.ParseURL(address)
	if err != nil {
		t.Fatal(err)
	}
	o.ReadTimeout = poll.Within
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestPurgeStreamJunk: twenty 20 MB entries on the purge stream, half of them there before
// the replica subscribes (it walks over them to take its position), half after (it reads
// them), each also published on the channel. The replica refuses and counts each
// (too_large), allocates less than ten times its read bound while it does, and hears the
// purge written after them.
func TestPurgeStreamJunk(t *testing.T) {
	const junk, junkBytes = 20, 20 << 20
	for _, tc := range keyCases {
		t.Run(tc.name, func(t *testing.T) {
			address := redistest.Start(t)
			c := junkWriter(t, address)
			ctx := context.Background()
			write := func(n int) {
				t.Helper()
				if err := c.Eval(ctx, junkScript, []string{"ssr:purgelog", "ssr:purges"}, n, junkBytes).Err(); err != nil {
					t.Fatal(err)
				}
			}
			a := newStoreWith(t, Options{Address: address, HMACKey: tc.key}) // a replica that purges
			s := newStoreWith(t, Options{Address: address, HMACKey: tc.key})
			bound := s.opts.PurgeLog.MaxReadBytes

			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			write(junk / 2)
			heard := hear(t, s)
			write(junk / 2)
			if _, err := a.Purge(ctx, Purge{"path", "/after-the-junk"}); err != nil {
				t.Fatal(err)
			}
			select {
			case p := <-heard:
				if p != (Purge{"path", "/after-the-junk"}) {
					t.Errorf("heard %+v, want the purge written after the junk", p)
				}
			case <-time.After(poll.Within):
				t.Fatal("the purge written after the junk was not heard")
			}
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			runtime.GC()
			var collected runtime.MemStats
			runtime.ReadMemStats(&collected)
			// TotalAlloc counts whatever was allocated, whenever the GC ran: a reply held
			// whole shows however soon it was collected.
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d MB of junk: %.1f MiB allocated, heap in use %+.1f MiB (read bound %d MiB)", junk*junkBytes>>20,
				float64(allocated)/(1<<20), (float64(collected.HeapInuse)-float64(before.HeapInuse))/(1<<20), bound>>20)
			if allocated > uint64(10*bound) {
				t.Errorf("%d bytes allocated while reading %d bytes of junk, want less than ten times the read bound (%d)", allocated, junk*junkBytes, bound)
			}
			if got := metric(t, s, "edge_shared_cache_purges_refused_total", "too_large"); got != junk {
				t.Errorf("%v entries refused as too large, want %d", got, junk)
			}
			if got := metric(t, s, "edge_shared_cache_local_drops_total", "reset") + metric(t, s, "edge_shared_cache_local_drops_total", "gap"); got != 0 {
				t.Errorf("the replica emptied its cache %v times, want none", got)
			}
		})
	}
}

// TestPurgeEntryLimit: an entry over MaxEntryBytes is refused as too_large, whether one field
// is too large or all of them together; a purge within it is heard; Purge writes none that
// the others would refuse.
func TestPurgeEntryLimit(t *testing.T) {
	const limit = 4 << 10
	address := redistest.Start(t)
	a := newStoreWith(t, Options{Address: address, HMACKey: testKey, PurgeLog: PurgeLogOptions{MaxEntryBytes: limit}})
	s := newStoreWith(t, Options{Address: address, HMACKey: testKey, PurgeLog: PurgeLogOptions{MaxEntryBytes: limit}})
	heard := hear(t, s)
	c := admin(t, address)
	ctx := context.Background()
	signed := func(value string) string {
		return message{Kind: "path", Value: value, ID: newPurgeID(), At: time.Now().UnixNano()}.signed("ssr:purgelog", testKey).encode()
	}
	tests := []struct {
		name   string
		values []any
	}{
		{"one field over the limit", []any{"m", signed("/" + strings.Repeat("x", limit))}},
		{"the fields together over the limit", []any{"m", signed("/p"), "a", strings.Repeat("x", limit/2), "b", strings.Repeat("x", limit/2)}},
		{"a name over the limit", []any{strings.Repeat("n", limit+1), "v", "m", signed("/p")}},
	}
	for i, tc := range tests {
		if err := c.XAdd(ctx, &redis.XAddArgs{Stream: "ssr:purgelog", Values: tc.values}).Err(); err != nil {
			t.Fatal(err)
		}
		c.Publish(ctx, "ssr:purges", "")
		poll.Until(t, tc.name+": refused as too_large", func() bool {
			return metric(t, s, "edge_shared_cache_purges_refused_total", "too_large") == float64(i+1)
		})
	}
	within := "/" + strings.Repeat("w", limit-300)
	if _, err := a.Purge(ctx, Purge{"path", within}); err != nil {
		t.Fatalf("a purge within the limit: %v", err)
	}
	select {
	case p := <-heard:
		if p != (Purge{"path", within}) {
			t.Errorf("heard %.40v, want the purge within the limit", p)
		}
	case <-time.After(poll.Within):
		t.Fatal("the purge within the limit was not heard")
	}
	if _, err := a.Purge(ctx, Purge{"path", "/" + strings.Repeat("x", limit)}); err == nil || !strings.Contains(err.Error(), "entry limit") {
		t.Errorf("a purge over the limit: got %v, want an error naming the entry limit", err)
	}
	if got := metric(t, s, "edge_shared_cache_purges_refused_total", "too_large"); got != float64(len(tests)) {
		t.Errorf("%v refused as too large, want %d: Purge wrote the purge over the limit", got, len(tests))
	}
}

// TestPurgeStreamDeleted: a client of the store deletes the purge stream again and again.
// The replica counts each loss, empties its own cache for the first at once, and for the
// others once FlushInterval has passed: with an interval longer than the test, once in
// all; with a short one, more than once, never twice within the interval. It goes on
// hearing purges.
func TestPurgeStreamDeleted(t *testing.T) {
	for _, tc := range []struct {
		name            string
		interval        time.Duration
		deletes         int
		atLeast, atMost int // flushes
	}{
		{"within the flush interval", time.Hour, 5, 1, 1},
		{"past the flush interval", 300 * time.Millisecond, 3, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			address := redistest.Start(t)
			c := admin(t, address)
			ctx := context.Background()
			a := newStoreWith(t, Options{Address: address, HMACKey: testKey})
			s := newStoreWith(t, Options{Address: address, HMACKey: testKey, PurgeLog: PurgeLogOptions{FlushInterval: tc.interval}})
			var mu sync.Mutex
			var flushed []time.Time // guarded by mu
			var heard []Purge       // guarded by mu
			subscribe(t, s, func(p Purge) {
				mu.Lock()
				defer mu.Unlock()
				if p.Kind == "all" {
					flushed = append(flushed, time.Now())
				} else {
					heard = append(heard, p)
				}
			})
			for i := range tc.deletes {
				if err := c.Del(ctx, "ssr:purgelog").Err(); err != nil {
					t.Fatal(err)
				}
				c.Publish(ctx, "ssr:purges", "")
				poll.Until(t, "the deleted stream counted", func() bool {
					return metric(t, s, "edge_shared_cache_purge_stream_losses_total", "reset") == float64(i+1)
				})
			}
			poll.Until(t, "the replica's flushes", func() bool {
				return metric(t, s, "edge_shared_cache_local_drops_total", "reset") >= float64(tc.atLeast)
			})
			if _, err := a.Purge(ctx, Purge{"path", "/after"}); err != nil {
				t.Fatal(err)
			}
			poll.Until(t, "the purge after the deletes heard", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(heard) == 1 && heard[0] == (Purge{"path", "/after"})
			})

			mu.Lock()
			defer mu.Unlock()
			if n := len(flushed); n < tc.atLeast || n > tc.atMost {
				t.Errorf("the replica's cache emptied %d times for %d deletes, want %d to %d", n, tc.deletes, tc.atLeast, tc.atMost)
			}
			if got := metric(t, s, "edge_shared_cache_local_drops_total", "reset"); got != float64(len(flushed)) {
				t.Errorf("%v flushes counted, %d made", got, len(flushed))
			}
			for i := 1; i < len(flushed); i++ {
				if gap := flushed[i].Sub(flushed[i-1]); gap < tc.interval {
					t.Errorf("flushes %s apart, want at least the flush interval (%s)", gap, tc.interval)
				}
			}
		})
	}
}
