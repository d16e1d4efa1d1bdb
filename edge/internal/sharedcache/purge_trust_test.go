package sharedcache

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache/redistest"
)

// Purges are written by whatever can reach the store, and a replica is sometimes away from
// it (issue 36): these tests forge purges, cut a replica off while another purges, and
// write a purged page back, against a real redis-server.

var testKey = bytes.Repeat([]byte("k"), 32)

// keyCases run a purge test on a replica without the purge key and on one with it.
var keyCases = []struct {
	name string
	key  []byte
}{{"without a key", nil}, {"with a key", testKey}}

// newStoreWith is a Store with o, its Timeout a second unless set, logging nothing.
func newStoreWith(t *testing.T, o Options) *Store {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = time.Second
	}
	o.Log = slog.New(slog.DiscardHandler)
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// admin is a client of the store at address as its default user: what the tests do behind
// the edges' backs.
func admin(t *testing.T, address string) *redis.Client {
	t.Helper()
	o, err := redis.ParseURL(address)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// subscribe runs s's subscription with apply until the test ends, and returns once it is in
// place.
func subscribe(t *testing.T, s *Store, apply func(Purge)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	channel := s.opts.Prefix + "purges"
	before := redistest.Subscribers(t, s.opts.Address, channel)
	go s.Subscribe(ctx, apply)
	redistest.Subscribed(t, s.opts.Address, channel, before+1)
}

// forged is a purge as a client of the store without its key writes it.
func forged(kind, value, id string) string {
	b, _ := json.Marshal(map[string]any{"Kind": kind, "Value": value, "ID": id, "At": time.Now().UnixNano()})
	return string(b)
}

// TestForgedPurgeFlood: 1,000 purges by prefix, half of them 10 KB long, written to the
// purge stream and published on the channel by a client without the key, then the issue's
// one message that purged everything. With the key, each is refused and counted, and none
// reaches the replica's cache or its memory; without it, the replica's memory of purges
// stays within its bounds (here 100 purges, 256 KiB), the oldest forgotten and counted.
func TestForgedPurgeFlood(t *testing.T) {
	const maxCount, maxBytes = 100, 256 << 10
	for _, tc := range keyCases {
		t.Run(tc.name, func(t *testing.T) {
			address := redistest.Start(t)
			s := newStoreWith(t, Options{Address: address, HMACKey: tc.key})
			bound(s, maxCount, maxBytes)
			var applied atomic.Int64
			subscribe(t, s, func(Purge) { applied.Add(1) })
			c := admin(t, address)
			ctx := context.Background()
			const bursts, burst = 20, 50
			for i := range bursts {
				if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
					for j := range burst {
						value := fmt.Sprintf("/%d/%d/", i, j)
						if j%2 == 0 {
							value += strings.Repeat("x", 10<<10)
						}
						payload := forged("prefix", value, fmt.Sprint(i, "-", j))
						p.XAdd(ctx, &redis.XAddArgs{Stream: "ssr:purgelog", Values: []any{"m", payload}})
						p.Publish(ctx, "ssr:purges", payload)
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			const everything = `{"Kind":"prefix","Value":"/","ID":"x"}`
			c.Publish(ctx, "ssr:purges", everything)
			c.XAdd(ctx, &redis.XAddArgs{Stream: "ssr:purgelog", Values: []any{"m", forged("prefix", "/", "x")}})
			const n = bursts*burst + 1

			if tc.key != nil {
				poll.Until(t, "the forged purges refused", func() bool { return metric(t, s, "edge_shared_cache_purges_refused_total", "unsigned") == n })
				if count, _ := remembered(s); count != 0 || applied.Load() != 0 {
					t.Errorf("%d forged purges remembered, %d applied; want none", count, applied.Load())
				}
				d := doc("b1 GET /{$} /", "/")
				if err := s.Set(ctx, d); err != nil {
					t.Fatal(err)
				}
				if e, err := s.Get(ctx, d.Key); e == nil || err != nil || s.Pending(d) {
					t.Errorf("after the forged purges: got %v, %v, pending %v; want the stored copy", e, err, s.Pending(d))
				}
				return
			}
			poll.Until(t, "the forged purges read", func() bool { return applied.Load() == n })
			count, size := remembered(s)
			if count > maxCount || size > maxBytes {
				t.Errorf("%d purges remembered, %d bytes; want at most %d and %d", count, size, maxCount, maxBytes)
			}
			if forgot := metric(t, s, "edge_shared_cache_purges_forgotten_total", ""); int(forgot)+count != n {
				t.Errorf("%v purges forgotten, %d remembered, of %d", forgot, count, n)
			}
			checkMemory(t, s)
		})
	}
}

// localTier is b's own cache holding docs, to which b's subscription applies purges as the
// server does (server.purgeLocal, for the kinds these tests use).
func localTier(t *testing.T, b *Store, docs ...*htmlcache.Entry) *htmlcache.Cache {
	t.Helper()
	c := htmlcache.New(htmlcache.Options{})
	for _, d := range docs {
		c.Set(d, c.Generation())
	}
	subscribe(t, b, func(p Purge) {
		switch p.Kind {
		case "all":
			c.PurgeIf(func(*htmlcache.Entry) bool { return true })
		case "path":
			c.PurgePath(p.Value)
		}
	})
	return c
}

// TestReplicaAwayCatchesUp: replica b is cut off from the store (its subscription killed,
// or all its connections) while replica a purges its page. b serves no purged page once it
// is back: it reads the purge from the stream, or, when the stream no longer holds what it
// missed (the store restarted empty, the stream trimmed past it), empties its own cache and
// counts that.
func TestReplicaAwayCatchesUp(t *testing.T) {
	ctx := context.Background()
	purge := func(path string) func(*testing.T, *Store, *redis.Client) {
		return func(t *testing.T, a *Store, _ *redis.Client) {
			if _, err := a.Purge(ctx, Purge{"path", path}); err != nil {
				t.Fatal(err)
			}
		}
	}
	flush := func(t *testing.T, _ *Store, c *redis.Client) { c.FlushAll(ctx) } // a restart without persistence
	trim := func(t *testing.T, _ *Store, c *redis.Client) { c.XTrimMaxLen(ctx, "ssr:purgelog", 1) }
	tests := []struct {
		name      string
		cut, kill []string // ACL SETUSER rules that keep b away, and the CLIENT KILL filter
		meanwhile []func(*testing.T, *Store, *redis.Client)
		drop      string // why b emptied its cache; "" when it read the purge
	}{
		{"subscription killed", []string{"resetchannels"}, []string{"TYPE", "pubsub"}, []func(*testing.T, *Store, *redis.Client){purge("/p")}, ""},
		{"network cut", []string{"off"}, []string{"USER", "b"}, []func(*testing.T, *Store, *redis.Client){purge("/p")}, ""},
		{"store restarted empty", []string{"off"}, []string{"USER", "b"}, []func(*testing.T, *Store, *redis.Client){purge("/p"), flush}, "reset"},
		{"store restarted empty, then a purge", []string{"off"}, []string{"USER", "b"}, []func(*testing.T, *Store, *redis.Client){purge("/p"), flush, purge("/r")}, "gap"},
		{"stream trimmed past", []string{"off"}, []string{"USER", "b"}, []func(*testing.T, *Store, *redis.Client){purge("/p"), purge("/r"), trim}, "gap"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			address := redistest.Start(t)
			c := admin(t, address)
			if err := c.Do(ctx, "ACL", "SETUSER", "b", "on", ">b-password", "~*", "&*", "+@all").Err(); err != nil {
				t.Fatal(err)
			}
			a := newStoreWith(t, Options{Address: address})
			b := newStoreWith(t, Options{Address: strings.Replace(address, "unix://", "unix://b:b-password@", 1)})
			page, other := doc("b1 GET /p /p", "/p"), doc("b1 GET /q /q", "/q")
			local := localTier(t, b, page, other)

			if err := c.Do(ctx, append([]any{"ACL", "SETUSER", "b"}, anys(tc.cut)...)...).Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.Do(ctx, append([]any{"CLIENT", "KILL"}, anys(tc.kill)...)...).Err(); err != nil {
				t.Fatal(err)
			}
			poll.Until(t, "b unsubscribed", func() bool { return redistest.Subscribers(t, address, "ssr:purges") == 0 })
			for _, f := range tc.meanwhile {
				f(t, a, c)
			}
			if err := c.Do(ctx, "ACL", "SETUSER", "b", "on", "&*").Err(); err != nil {
				t.Fatal(err)
			}

			poll.Until(t, "b's cache to drop the purged page", func() bool {
				_, state := local.Get(page.Key)
				return state == htmlcache.Missing
			})
			if _, state := local.Get(other.Key); (state == htmlcache.Missing) != (tc.drop != "") {
				t.Errorf("b's other page: %v; want it dropped only if b emptied its cache (%q)", state, tc.drop)
			}
			for _, reason := range []string{"gap", "reset"} {
				if got, want := metric(t, b, "edge_shared_cache_local_drops_total", reason), map[bool]float64{true: 1}[reason == tc.drop]; got != want {
					t.Errorf("b emptied its cache %v times for reason %s, want %v", got, reason, want)
				}
			}
		})
	}
}

func anys(s []string) []any {
	a := make([]any, len(s))
	for i, v := range s {
		a[i] = v
	}
	return a
}

// TestReplayedValueIsAMiss: a signed document written back under its key after a purge
// that matched it is a miss, and is deleted, for the replica that purged, for another that
// read the purge, and for one that started after it; a document stored after the purge is
// served.
func TestReplayedValueIsAMiss(t *testing.T) {
	address := redistest.Start(t)
	c := admin(t, address)
	ctx := context.Background()
	a, b := newStoreWith(t, Options{Address: address, HMACKey: testKey}), newStoreWith(t, Options{Address: address, HMACKey: testKey})
	heard := hear(t, b)
	d := doc("b1 GET /p /p", "/p")
	if err := a.Set(ctx, d); err != nil {
		t.Fatal(err)
	}
	old, err := c.Get(ctx, "ssr:doc:"+d.Key).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := a.Purge(ctx, Purge{"path", "/p"}); n != 1 || err != nil {
		t.Fatalf("purge: %d, %v", n, err)
	}
	select {
	case <-heard:
	case <-time.After(5 * time.Second):
		t.Fatal("replica b did not hear the purge")
	}
	later := newStoreWith(t, Options{Address: address, HMACKey: testKey})
	subscribe(t, later, func(Purge) {})

	readers := []struct {
		name  string
		store *Store
	}{{"the replica that purged", a}, {"another replica", b}, {"a replica started after the purge", later}}
	for _, r := range readers {
		if err := c.Set(ctx, "ssr:doc:"+d.Key, old, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if e, err := r.store.Get(ctx, d.Key); e != nil || err != nil {
			t.Errorf("%s: the value written back after the purge: got %v, %v; want a miss", r.name, e, err)
		}
		if stored(t, a, d.Key) {
			t.Errorf("%s: the value written back is still in the store", r.name)
		}
		if got := metric(t, r.store, "edge_shared_cache_superseded_total", ""); got != 1 {
			t.Errorf("%s: %v superseded copies counted, want 1", r.name, got)
		}
	}

	rendered := doc(d.Key, d.Path)
	rendered.Stored = time.Now().Add(clockSlack) // after the purge, on any clock within the slack
	if err := a.Set(ctx, rendered); err != nil {
		t.Fatal(err)
	}
	for _, r := range readers {
		if e, err := r.store.Get(ctx, d.Key); e == nil || err != nil {
			t.Errorf("%s: a document stored after the purge: got %v, %v", r.name, e, err)
		}
	}
}
