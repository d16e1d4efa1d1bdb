package htmlcache

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// entry is a small entry for key, stored now.
func (c *clock) entry(key string) *Entry {
	e := entry(key, 10)
	e.Stored = c.t
	return e
}

// sized is a 200 for key whose body is size bytes, stored now.
func (c *clock) sized(key string, size int) *Entry {
	e := entry(key, size)
	e.Stored = c.t
	return e
}

func entry(key string, body int) *Entry {
	return &Entry{Key: key, Path: key, Status: 200, Bodies: map[string][]byte{"": make([]byte, body)},
		TTL: 10 * time.Second, StaleWhileRevalidate: 5 * time.Second, StaleIfError: 60 * time.Second}
}

func TestStates(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	c := New(Options{Now: clk.now})
	c.Set(&Entry{Key: "k", Stored: clk.t, TTL: 10 * time.Second, StaleWhileRevalidate: 5 * time.Second, StaleIfError: 60 * time.Second}, c.Generation())

	tests := []struct {
		at      time.Duration
		want    State
		wantTTL time.Duration
	}{
		{0, Fresh, 10 * time.Second},
		{9 * time.Second, Fresh, time.Second},
		{10 * time.Second, Stale, 0},
		{14 * time.Second, Stale, -4 * time.Second},
		{15 * time.Second, StaleIfError, -5 * time.Second},
		{69 * time.Second, StaleIfError, -59 * time.Second},
		{70 * time.Second, Missing, 0},
	}
	start := clk.t
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.at), func(t *testing.T) {
			clk.t = start.Add(tt.at)
			e, got := c.Get("k")
			if got != tt.want {
				t.Fatalf("at +%s: got %s, want %s", tt.at, got, tt.want)
			}
			if e != nil && e.TTLAt(clk.t) != tt.wantTTL {
				t.Errorf("at +%s: got ttl %s, want %s", tt.at, e.TTLAt(clk.t), tt.wantTTL)
			}
		})
	}
	if n, _ := c.Stats(); n != 0 {
		t.Errorf("an entry past every window is still stored (%d entries)", n)
	}
}

func TestSWRWiderThanSIE(t *testing.T) {
	// stale_while_revalidate longer than stale_if_error: the stale copy is still served
	// at once until SWR ends.
	clk := &clock{t: time.Unix(0, 0)}
	c := New(Options{Now: clk.now})
	c.Set(&Entry{Key: "k", Stored: clk.t, TTL: time.Second, StaleWhileRevalidate: time.Minute, StaleIfError: 2 * time.Second}, c.Generation())
	clk.advance(30 * time.Second)
	if _, got := c.Get("k"); got != Stale {
		t.Errorf("got %s, want stale", got)
	}
}

// TestEvictsByBytes: a full cache evicts to stay within its bytes, reports what it evicted,
// and keeps the entry that was asked for again rather than one seen once.
func TestEvictsByBytes(t *testing.T) {
	clk := &clock{t: time.Unix(0, 0)}
	var evicted []string
	c := New(Options{MaxBytes: 3*1300 + 1000, NegativeMaxBytes: 1000, MaxEntryBytes: 2000, Now: clk.now,
		OnEvict: func(e *Entry) { evicted = append(evicted, e.Key) }})
	for _, k := range []string{"a", "b", "c"} {
		c.Set(clk.sized(k, 1000), c.Generation())
	}
	c.Get("a") // a is asked for again; b and c were not
	c.Set(clk.sized("d", 1000), c.Generation())
	if len(evicted) != 1 || evicted[0] == "a" {
		t.Errorf("evicted %v, want one of b, c, d", evicted)
	}
	for _, key := range []string{"a", "b", "c", "d"} {
		if _, state := c.Get(key); (state != Missing) == slices.Contains(evicted, key) {
			t.Errorf("%s: got %s, evicted %v", key, state, evicted)
		}
	}
	if n, bytes := c.Stats(); n != 3 || bytes > 3*1300 {
		t.Errorf("cache holds %d entries, %d bytes; want 3, within 3900", n, bytes)
	}
	if c.Set(entry("huge", 5000), c.Generation()) {
		t.Errorf("an entry over MaxEntryBytes was stored")
	}
}

func TestReplaceKeepsAccounting(t *testing.T) {
	c := New(Options{})
	for range 3 {
		c.Set(entry("k", 1000), c.Generation())
	}
	n, bytes := c.Stats()
	if n != 1 || bytes != entry("k", 1000).Size() {
		t.Errorf("got %d entries, %d bytes after replacing one key thrice", n, bytes)
	}
}

func TestPurge(t *testing.T) {
	clk := &clock{t: time.Unix(0, 0)}
	c := New(Options{Now: clk.now})
	for _, p := range []string{"/products/1", "/products/12", "/product", "/"} {
		e := entry("build|"+p, 10)
		e.Path, e.Stored = p, clk.t
		c.Set(e, c.Generation())
	}
	if !c.PurgeKey("build|/") || c.PurgeKey("build|/") {
		t.Errorf("purging a key should succeed once")
	}
	if n := c.PurgeIf(func(e *Entry) bool { return strings.HasPrefix(e.Path, "/products/") }); n != 2 {
		t.Errorf("purged %d by prefix, want 2", n)
	}
	if _, state := c.Get("build|/product"); state != Fresh {
		t.Errorf("/product was purged by the prefix /products/")
	}
	if e, _ := c.Get("build|/product"); e == nil {
		t.Errorf("after purges: /product is gone")
	} else if n, bytes := c.Stats(); n != 1 || bytes != e.Size() {
		t.Errorf("after purges: %d entries, %d bytes, want 1 and %d", n, bytes, e.Size())
	}
}

func TestPurgeTag(t *testing.T) {
	clk := &clock{t: time.Unix(0, 0)}
	c := New(Options{Now: clk.now})
	for key, tags := range map[string][]string{"a": {"product:7", "home"}, "b": {"product:7"}, "c": {"product:8"}, "d": nil} {
		e := entry(key, 10)
		e.Tags, e.Stored = tags, clk.t
		c.Set(e, c.Generation())
	}
	if n := c.PurgeTag("product:7"); n != 2 {
		t.Errorf("purged %d tagged product:7, want 2", n)
	}
	if n := c.PurgeTag("product"); n != 0 {
		t.Errorf("a tag matched as a prefix: purged %d", n)
	}
	if n, _ := c.Stats(); n != 2 {
		t.Errorf("%d entries left, want c and d", n)
	}
}

// TestPurgeCoversRendersInFlight: a render that began before a purge must not store its
// result after it, whether the purge named its key, a prefix of its path, or another key.
func TestPurgeCoversRendersInFlight(t *testing.T) {
	clk := &clock{t: time.Unix(0, 0)}
	c := New(Options{Now: clk.now})
	fill := clk.entry
	began := c.Generation()
	c.PurgeKey("/a")
	if c.Set(fill("/a"), began) {
		t.Errorf("a render of /a that began before /a was purged was stored")
	}
	if !c.Set(fill("/b"), began) {
		t.Errorf("a purge of /a kept a render of /b from being stored")
	}
	if !c.Purged(began, fill("/a")) || c.Purged(began, fill("/b")) || c.Purged(c.Generation(), fill("/a")) {
		t.Errorf("Purged disagrees with Set")
	}
	if !c.Set(fill("/a"), c.Generation()) {
		t.Errorf("a render of /a that began after the purge was not stored")
	}

}

// TestPurgesAreRememberedForPurgeMemory: a purge is forgotten PurgeMemory after it (on the
// real clock, not Now's), and so is its memory; a render that began before a purge now
// forgotten is not stored, since what it matched is no longer known.
func TestPurgesAreRememberedForPurgeMemory(t *testing.T) {
	wall := &clock{t: time.Unix(0, 0)}
	c := New(Options{PurgeMemory: 10 * time.Second})
	c.clock = wall.now
	fill := func(key string) *Entry {
		e := entry(key, 10)
		e.Stored = time.Now()
		return e
	}
	began := c.Generation()
	c.PurgePath("/a")
	wall.advance(9 * time.Second)
	c.PurgeTag("t")
	if !c.Purged(began, fill("/a")) || c.Purged(began, fill("/b")) {
		t.Errorf("within PurgeMemory: the purge of /a is not remembered exactly")
	}
	wall.advance(2 * time.Second) // /a's purge is 11 s old, t's 2 s
	c.PurgePrefix("/p/")
	if !c.Purged(began, fill("/b")) {
		t.Errorf("a render that began before a purge now forgotten may be stored")
	}
	if since := c.Generation() - 2; c.Purged(since, fill("/b")) || !c.Purged(since, &Entry{Key: "x", Path: "/p/1"}) {
		t.Errorf("a render that began after the forgotten purge: judged by the purges since, got otherwise")
	}
	if len(c.purges) != 2 || len(c.latest[byPath]) != 0 {
		t.Errorf("remembered %d purges (%d paths), want 2 and none: memory is bounded by time", len(c.purges), len(c.latest[byPath]))
	}

	c.RememberPurgesFor(time.Minute) // a page whose renders may take that long
	wall.advance(30 * time.Second)
	c.PurgeKey("/k")
	if len(c.purges) != 3 {
		t.Errorf("after RememberPurgesFor(1m), a purge 32 s old was forgotten")
	}
}

func TestHitForMissNeverReplacesAUsableCopy(t *testing.T) {
	clk := &clock{t: time.Unix(0, 0)}
	c := New(Options{Now: clk.now})
	good := entry("k", 10)
	good.Stored = clk.t
	c.Set(good, c.Generation())
	pass := func() *Entry { return &Entry{Key: "k", Pass: true, Stored: clk.t, TTL: time.Second} }

	for _, at := range []time.Duration{0, 12 * time.Second, 30 * time.Second} { // fresh, stale, stale-if-error
		clk.t = time.Unix(0, 0).Add(at)
		if c.Set(pass(), c.Generation()) {
			t.Errorf("+%s: a hit-for-miss marker replaced the stored copy", at)
		}
		if e, _ := c.Get("k"); e != good {
			t.Fatalf("+%s: the stored copy is gone", at)
		}
	}
	clk.t = time.Unix(0, 0).Add(71 * time.Second) // past every window: nothing left to protect
	if !c.Set(pass(), c.Generation()) {
		t.Errorf("a marker could not replace an entry past all its windows")
	}
	if !c.Set(entry("k", 10), c.Generation()) {
		t.Errorf("a storable result could not replace the marker")
	}
}

func TestSizeCountsCapacity(t *testing.T) {
	e := &Entry{Key: "k", Bodies: map[string][]byte{"": make([]byte, 10, 100_000)}}
	if e.Size() < 100_000 {
		t.Errorf("got size %d for a body holding 100000 bytes of memory", e.Size())
	}
}

func BenchmarkGetHit(b *testing.B) {
	c := New(Options{})
	for i := range 1000 {
		e := entry(fmt.Sprintf("build|/products/%d", i), 100)
		e.Stored = time.Now()
		e.TTL = time.Hour
		c.Set(e, c.Generation())
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, s := c.Get("build|/products/7"); s != Fresh {
				b.Fatal(s)
			}
		}
	})
}

// TestManyPurgesDuringARender: purges of other documents while a render runs, however many,
// neither keep its result from being stored nor new requests from joining it; a purge that
// matches it does.
func TestManyPurgesDuringARender(t *testing.T) {
	clk := &clock{t: time.Unix(0, 0)}
	c := New(Options{Now: clk.now})
	fill := clk.entry
	began := c.Generation()
	for i := range 100 {
		c.PurgePath(fmt.Sprint("/other/", i))
		c.PurgeTag(fmt.Sprint("other:", i))
	}
	if c.Purged(began, fill("/a")) {
		t.Errorf("after 200 purges of other documents, a render of /a that began before them may not be joined")
	}
	if !c.Set(fill("/a"), began) {
		t.Errorf("after 200 purges of other documents, a render of /a that began before them was not stored")
	}
	c.PurgePath("/b")
	for i := range 100 {
		c.PurgePath(fmt.Sprint("/more/", i))
	}
	if !c.Purged(began, fill("/b")) || c.Set(fill("/b"), began) {
		t.Errorf("a render of /b that began before /b was purged (and 100 purges after) was stored")
	}
}
