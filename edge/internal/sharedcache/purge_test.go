package sharedcache

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache/redistest"
)

func doc(key, path string, tags ...string) *htmlcache.Entry {
	return &htmlcache.Entry{Key: key, Path: path, Tags: tags, Status: 200, Bodies: map[string][]byte{"": []byte(key)}, Stored: time.Now(), TTL: time.Minute}
}

// hear subscribes s and returns the purges it hears.
func hear(t *testing.T, s *Store) <-chan Purge {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	heard := make(chan Purge, 100)
	channel := s.opts.Prefix + "purges"
	before := redistest.Subscribers(t, s.opts.Address, channel)
	go s.Subscribe(ctx, func(p Purge) { heard <- p })
	redistest.Subscribed(t, s.opts.Address, channel, before+1)
	return heard
}

// stored reports whether the store holds the document stored under key.
func stored(t *testing.T, s *Store, key string) bool {
	t.Helper()
	n, err := s.rdb.Exists(context.Background(), "ssr:doc:"+key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// sleep makes the store busy for d (DEBUG SLEEP from a client of its own), from now on.
func sleep(t *testing.T, address string, d time.Duration) {
	redistest.Busy(t, address, d)
}

// TestPurgeWhileTheStoreSleeps: a purge that cannot reach the store says so, the copy it
// names is refused meanwhile, and once the store answers again the purge is applied there.
func TestPurgeWhileTheStoreSleeps(t *testing.T) {
	address := redistest.Start(t)
	a, b := newStore(t, address, 50*time.Millisecond), newStore(t, address, 50*time.Millisecond)
	heard := hear(t, b)
	ctx := context.Background()
	d := doc("b1 GET /products/{id} /products/7", "/products/7")
	if err := a.Set(ctx, d); err != nil {
		t.Fatal(err)
	}
	sleep(t, address, 3*time.Second) // a purge that waited for the store would succeed
	n, err := a.Purge(ctx, Purge{"path", "/products/7"})
	if err == nil {
		t.Errorf("a purge while the store sleeps: got %d, no error; want an error", n)
	}
	if !a.Pending(d) {
		t.Errorf("replica a may take the store's copy of a purge the store did not take")
	}
	checker := newStore(t, address, 10*time.Second)
	poll.Until(t, "the store to drop the purged document once it came back", func() bool { return !stored(t, checker, d.Key) })
	select {
	case p := <-heard:
		if p != (Purge{"path", "/products/7"}) {
			t.Errorf("replica b heard %+v", p)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("replica b never heard the purge")
	}
	poll.Until(t, "the purge no longer pending on either replica once the store took it", func() bool { return !a.Pending(d) && !b.Pending(d) })
}

// TestPurgeReachesReplicasWhenDeletesFail: the other replicas hear a purge even when its
// deletes in the store fail (here: a corrupt index).
func TestPurgeReachesReplicasWhenDeletesFail(t *testing.T) {
	address := redistest.Start(t)
	a, b := newStore(t, address, time.Second), newStore(t, address, time.Second)
	heard := hear(t, b)
	ctx := context.Background()
	d := doc("b1 GET /products/{id} /products/8", "/products/8")
	if err := a.Set(ctx, d); err != nil {
		t.Fatal(err)
	}
	corrupt := []string{"ssr:path:/products/8", "ssr:ix:path:/products/8"} // this version's index, and the one before
	for _, index := range corrupt {
		a.rdb.Del(ctx, index)
		a.rdb.Set(ctx, index, "not an index", time.Minute)
	}
	if n, err := a.Purge(ctx, Purge{"path", "/products/8"}); err == nil {
		t.Errorf("a purge whose deletes failed: got %d, no error", n)
	}
	select {
	case p := <-heard:
		if p != (Purge{"path", "/products/8"}) {
			t.Errorf("replica b heard %+v", p)
		}
	case <-time.After(2 * time.Second):
		t.Fatalf("replica b did not hear the purge whose deletes failed")
	}
	if !a.Pending(d) || !b.Pending(d) {
		t.Errorf("pending on replica a: %v, b: %v; want both to refuse the store's copy", a.Pending(d), b.Pending(d))
	}
	if other := doc("b1 GET /products/{id} /products/9", "/products/9"); a.Pending(other) || b.Pending(other) {
		t.Errorf("the pending purge of /products/8 refuses a copy of /products/9")
	}

	// The index repaired (at once: the retries go on meanwhile), the retries purge the
	// store, and every replica takes its copies again.
	if _, err := a.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, corrupt...)
		p.ZAdd(ctx, "ssr:ix:path:/products/8", redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: d.Key})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the store to drop the purged document once its index was repaired", func() bool { return !stored(t, a, d.Key) })
	poll.Until(t, "the purge no longer pending on either replica once the store took it", func() bool { return !a.Pending(d) && !b.Pending(d) })
}

// indexLeftovers lists the index members whose documents the store no longer holds, and
// the records of documents it no longer holds, as "index → key".
func indexLeftovers(t *testing.T, s *Store) []string {
	t.Helper()
	ctx := context.Background()
	keys, err := s.rdb.Keys(ctx, "ssr:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, key := range keys {
		if strings.HasPrefix(key, "ssr:doc:") {
			continue
		}
		if of, ok := strings.CutPrefix(key, "ssr:ix:of:"); ok {
			if !stored(t, s, of) {
				left = append(left, key+" (a record of a document gone)")
			}
			continue
		}
		var members []string
		switch s.rdb.Type(ctx, key).Val() {
		case "set":
			members = s.rdb.SMembers(ctx, key).Val()
		case "zset":
			members = s.rdb.ZRange(ctx, key, 0, -1).Val()
		}
		for _, m := range members {
			if !stored(t, s, m) {
				left = append(left, key+" → "+m)
			}
		}
	}
	slices.Sort(left)
	return left
}

// TestPurgePrunesIndexes: after a purge, no index names a document the purge deleted or
// one that expired; nor after a write to the index.
func TestPurgePrunesIndexes(t *testing.T) {
	s := newStore(t, redistest.Start(t), time.Second)
	ctx := context.Background()
	short := doc("c", "/c", "t")
	short.TTL = 200 * time.Millisecond
	for _, e := range []*htmlcache.Entry{doc("a", "/a", "t", "u"), doc("b", "/b", "t"), short, doc("d", "/d", "u")} {
		if err := s.Set(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, "c to expire", func() bool { return !stored(t, s, "c") })
	if n, err := s.Purge(ctx, Purge{"key", "a"}); n != 1 || err != nil {
		t.Fatalf("purge of a: got %d, %v", n, err)
	}
	if left := indexLeftovers(t, s); len(left) > 0 {
		t.Errorf("after the purge of a (c expired), the indexes name documents gone: %q", left)
	}
	if n, err := s.Purge(ctx, Purge{"tag", "u"}); n != 1 || err != nil {
		t.Fatalf("purge of tag u: got %d, %v", n, err)
	}
	if left := indexLeftovers(t, s); len(left) > 0 {
		t.Errorf("after the purge of tag u, the indexes name documents gone: %q", left)
	}

	// A hot tag: a thousand documents expire, one more is written.
	for i := range 1000 {
		e := doc(fmt.Sprint("hot-", i), fmt.Sprint("/hot/", i), "hot")
		e.TTL = 200 * time.Millisecond
		if err := s.Set(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, "the hot documents to expire", func() bool { return !stored(t, s, "hot-999") })
	if err := s.Set(ctx, doc("hot-live", "/hot/live", "hot")); err != nil {
		t.Fatal(err)
	}
	if left := indexLeftovers(t, s); len(left) > 0 {
		t.Errorf("after a write to a tag whose documents expired, its index names %d documents gone: %q...", len(left), left[0])
	}
	if n, err := s.Purge(ctx, Purge{"tag", "hot"}); n != 1 || err != nil {
		t.Errorf("purge of tag hot: got %d, %v; want 1", n, err)
	}
}
