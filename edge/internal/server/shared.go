package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache"
)

// sharedTier is the cache's second level (edge.shared_cache_address): before a replica
// renders a key it reads the store, where any replica's render of it is; a cold key is
// rendered by the one replica that takes its lock in the store, the others wait for its
// result (up to the route's hard timeout, then they render too); every render is written
// back. Purges go through the store to every replica. A failing store is skipped: the
// replica renders on its own, as with no second level.
type sharedTier struct {
	store   *sharedcache.Store
	metrics *Metrics
	log     *slog.Logger
}

// sharedPoll is how often a replica waiting on another's render looks for its result.
const sharedPoll = 10 * time.Millisecond

// lockSlack is how much longer than the hard timeout a render lock lives: the holder
// writes its copy to the store after its render.
const lockSlack = time.Second

// fetch returns a fresh copy of key from the store; when another replica holds the key's
// render lock, it waits for that replica's copy, up to wait (the hard timeout: the requests
// themselves fall back at their render timeout as they would here), taking the lock itself if
// it comes free with no copy (that render failed). Otherwise it returns nil and the release
// of the render lock this replica now holds (a no-op when it holds none: the store failed,
// or the other replica is later than wait). A copy that a purge the store has not confirmed
// matches is not used (sharedcache.Store.Pending): this replica renders, with no lock.
func (s *sharedTier) fetch(key string, wait time.Duration, now func() time.Time) (*htmlcache.Entry, func()) {
	none := func() {}
	ctx := context.Background()
	for deadline := time.Now().Add(wait); ; time.Sleep(sharedPoll) {
		e, err := s.get(ctx, key, now)
		if e != nil && s.store.Pending(e) {
			return nil, none
		}
		if e != nil || err != nil {
			return e, none
		}
		began := time.Now()
		// The lock outlives the holder's render (within wait, the hard timeout) and the
		// write of its copy.
		unlock, acquired, err := s.store.LockFor(ctx, key, wait+lockSlack)
		s.observe("lock", began, err, either(acquired, "ok", "held"))
		if err != nil || acquired || time.Now().After(deadline) {
			return nil, unlock
		}
	}
}

// get reads key, and returns its copy only while it is fresh: a stale copy is refreshed by
// a render, as in this replica's own cache. A value that is no document an edge stores
// (sharedcache.ErrInvalid, or one with a header the edge sets itself) is counted as invalid
// and is a miss: this replica renders, and its render replaces the value.
func (s *sharedTier) get(ctx context.Context, key string, now func() time.Time) (*htmlcache.Entry, error) {
	began := time.Now()
	e, err := s.store.Get(ctx, key)
	if e != nil {
		if name := ownHeader(e.Header); name != "" {
			e, err = nil, s.store.Reject(key, fmt.Errorf("header %s, which the edge sets itself", name))
		}
	}
	if errors.Is(err, sharedcache.ErrInvalid) {
		s.observe("get", began, nil, "invalid")
		return nil, nil
	}
	if e != nil && e.StateAt(now()) != htmlcache.Fresh {
		e = nil
	}
	s.observe("get", began, err, either(e != nil, "hit", "miss"))
	return e, err
}

// put writes a render's document to the store, then releases the render lock, so that the
// replicas waiting on it find the document. It does not hold up the requests that wait for
// the render here.
func (s *sharedTier) put(e *htmlcache.Entry, unlock func()) {
	go func() {
		defer unlock()
		if e == nil {
			return
		}
		began := time.Now()
		err := s.store.Set(context.Background(), e)
		if errors.Is(err, sharedcache.ErrInvalid) { // a document the store's values may not hold
			s.observe("set", began, nil, "invalid")
			return
		}
		s.observe("set", began, err, "ok")
	}()
}

// purge tells every other replica of p and removes its documents from the store. When
// either fails, the store goes on retrying it in the background, and refuses meanwhile the
// store's copies it names (sharedcache.Store.Purge).
func (s *sharedTier) purge(ctx context.Context, p sharedcache.Purge) (int, error) {
	began := time.Now()
	n, err := s.store.Purge(ctx, p)
	s.observe("purge", began, err, "ok")
	if err != nil {
		s.log.Error("shared cache: purge not applied to the store yet: retrying in the background, its copies refused meanwhile",
			"kind", p.Kind, "value", p.Value, "err", err)
	}
	return n, err
}

func (s *sharedTier) observe(op string, began time.Time, err error, result string) {
	switch {
	case errors.Is(err, sharedcache.ErrUnavailable):
		result = "unavailable"
	case err != nil:
		result = "error"
	}
	s.metrics.sharedCalls.WithLabelValues(op, result).Observe(time.Since(began).Seconds())
}

// either is a metric's result label: yes when ok, else no.
func either(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}
