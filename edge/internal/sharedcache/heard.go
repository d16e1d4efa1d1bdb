package sharedcache

import (
	"strings"
	"sync"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
)

// heardPurges are the purges this replica knows of: its own, and those it read from the
// purge stream. They decide two things about a copy the store returns:
//
//   - open purges, which the store has not confirmed (their Done not read yet, and not
//     older than purgeRetryFor), refuse every copy they match, whenever it was stored
//     (pending);
//   - every remembered purge refuses the copies it matches that were stored before it
//     was made, or within clockSlack after (superseded): a signed value written back after
//     a purge is not served again.
//
// They are bounded by count and bytes, the oldest forgotten first: whatever the stream
// holds, a replica's memory and the cost of looking a copy up stay fixed. Both lookups go
// through indexes by kind and value, so they cost the same whatever the number of purges.
type heardPurges struct {
	mu    sync.Mutex
	order []*heardPurge            // guarded by mu: oldest first
	byID  map[string]*heardPurge   // guarded by mu
	bytes int                      // guarded by mu: size of every purge in order
	made  [kinds]map[string]latest // guarded by mu: by kind and value, the latest purge made
	open  [kinds]map[string]int    // guarded by mu: by kind and value, how many are open
	opens int                      // guarded by mu: how many are open in all
	// aged is how many purges at the head of order were heard purgeRetryFor ago or more:
	// the other replicas' among them are no longer open. Guarded by mu.
	aged int
	// failed are this replica's own purges whose first try failed, oldest first; retrying
	// says retryLoop runs. Guarded by mu. Kept apart from order: forgetting a purge does
	// not stop its retries.
	failed   []*heardPurge
	retrying bool

	// maxCount and maxBytes bound order (maxHeardPurges, maxHeardBytes; tests set less).
	maxCount, maxBytes int
}

const (
	// maxHeardPurges and maxHeardBytes bound what a replica remembers of purges: the last
	// 10,000 at most, and 8 MiB of them.
	maxHeardPurges = 10_000
	maxHeardBytes  = 8 << 20
	// heardOverhead is what remembering a purge costs beyond its value and ID, roughly: the
	// struct, its place in order and byID, and its index entries.
	heardOverhead = 256
	// clockSlack is how far apart the replicas' clocks may be, and how late a replica may
	// hear of a purge while it stores a render that began before: a copy stored less than
	// this after a purge it matches is refused too, which costs a render.
	clockSlack = time.Second
)

// The kinds of purge, as the indexes number them.
const (
	byKey = iota
	byPath
	byPrefix
	byTag
	kinds
)

var kindIndex = map[string]int{"key": byKey, "path": byPath, "prefix": byPrefix, "tag": byTag}

// latest is what the index knows of the purges of one kind and value: when the latest was
// made, and how many are remembered.
type latest struct {
	at time.Time
	n  int
}

type heardPurge struct {
	Purge
	id    string
	at    time.Time // when it was made
	heard time.Time // when this replica heard of it (made it, for its own)
	own   bool      // this replica's: it publishes it, and retries it once it failed
	// open: the store has not confirmed it, and it is not older than purgeRetryFor (own:
	// retryLoop has not given up); published: the stream has it; failed: its first try did
	// not confirm it. Guarded by heardPurges.mu.
	open, published, failed bool
}

func (pp *heardPurge) size() int { return len(pp.Value) + len(pp.id) + heardOverhead }

func newHeardPurges() heardPurges {
	return heardPurges{maxCount: maxHeardPurges, maxBytes: maxHeardBytes}
}

// add remembers p, made at at: its own (own) or one read from the stream. It returns the
// purge and whether it was new (an ID already remembered is kept as it was), and how many
// purges it forgot to stay within bounds. A purge claimed to be made later than now (and
// clockSlack) counts as made now: a clock far ahead does not refuse copies for long.
func (q *heardPurges) add(p Purge, id string, at time.Time, own bool) (pp *heardPurge, added bool, forgot int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	q.ageLocked(now)
	if pp, ok := q.byID[id]; ok {
		return pp, false, 0
	}
	if q.byID == nil {
		q.byID = map[string]*heardPurge{}
		for k := range kinds {
			q.made[k], q.open[k] = map[string]latest{}, map[string]int{}
		}
	}
	if at.After(now.Add(clockSlack)) {
		at = now
	}
	// Another replica's purge made purgeRetryFor ago was confirmed, or given up, by now.
	pp = &heardPurge{Purge: p, id: id, at: at, heard: now, own: own, open: own || now.Sub(at) <= purgeRetryFor}
	q.order = append(q.order, pp)
	q.byID[id] = pp
	q.bytes += pp.size()
	k := kindIndex[p.Kind]
	m := q.made[k][p.Value]
	if at.After(m.at) {
		m.at = at
	}
	m.n++
	q.made[k][p.Value] = m
	if pp.open {
		q.open[k][p.Value]++
		q.opens++
	}
	for len(q.order) > q.maxCount || q.bytes > q.maxBytes {
		q.forgetOldestLocked()
		forgot++
	}
	return pp, true, forgot
}

// forgetOldestLocked drops the oldest purge from memory (not from retryLoop's).
func (q *heardPurges) forgetOldestLocked() {
	pp := q.order[0]
	q.order[0] = nil // its value is garbage now
	q.order = q.order[1:]
	q.aged = max(q.aged-1, 0)
	q.closeLocked(pp)
	delete(q.byID, pp.id)
	q.bytes -= pp.size()
	k := kindIndex[pp.Kind]
	// The latest time stays while a purge of the value is remembered: a copy stored
	// before a purge that was made is refused a little longer, never served wrongly.
	if m := q.made[k][pp.Value]; m.n > 1 {
		m.n--
		q.made[k][pp.Value] = m
	} else {
		delete(q.made[k], pp.Value)
	}
}

// ageLocked closes the other replicas' purges heard purgeRetryFor ago (retryLoop gives up
// on this replica's own). order is by the time each was heard, so those are at its head.
func (q *heardPurges) ageLocked(now time.Time) {
	for ; q.aged < len(q.order) && now.Sub(q.order[q.aged].heard) > purgeRetryFor; q.aged++ {
		if pp := q.order[q.aged]; !pp.own {
			q.closeLocked(pp)
		}
	}
}

func (q *heardPurges) closeLocked(pp *heardPurge) {
	if !pp.open {
		return
	}
	pp.open = false
	k := kindIndex[pp.Kind]
	if q.open[k][pp.Value]--; q.open[k][pp.Value] == 0 {
		delete(q.open[k], pp.Value)
	}
	q.opens--
}

// confirm closes the purge id names: the store is purged of it.
func (q *heardPurges) confirm(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if pp, ok := q.byID[id]; ok {
		q.closeLocked(pp)
	}
}

// confirmOwn closes pp, one of this replica's own purges, remembered or not.
func (q *heardPurges) confirmOwn(pp *heardPurge) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.byID[pp.id] == pp {
		q.closeLocked(pp)
	}
	pp.failed = false
}

func (q *heardPurges) published(pp *heardPurge) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return pp.published
}

func (q *heardPurges) markPublished(pp *heardPurge) {
	q.mu.Lock()
	defer q.mu.Unlock()
	pp.published = true
}

// pending reports whether an open purge matches e.
func (q *heardPurges) pending(e *htmlcache.Entry) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ageLocked(time.Now())
	if q.opens == 0 {
		return false
	}
	return findLocked(&q.open, e, func(n int) bool { return n > 0 })
}

// superseded reports whether a remembered purge that matches e was made after e was stored,
// or less than clockSlack before.
func (q *heardPurges) superseded(e *htmlcache.Entry) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.order) == 0 {
		return false
	}
	return findLocked(&q.made, e, func(m latest) bool { return e.Stored.Before(m.at.Add(clockSlack)) })
}

// findLocked reports whether the index of a purge that matches e holds a value hit accepts:
// e's key, path, tags, or a prefix of its path.
func findLocked[V any](index *[kinds]map[string]V, e *htmlcache.Entry, hit func(V) bool) bool {
	look := func(k int, value string) bool {
		v, ok := index[k][value]
		return ok && hit(v)
	}
	if look(byKey, e.Key) || look(byPath, e.Path) {
		return true
	}
	for _, tag := range e.Tags {
		if look(byTag, tag) {
			return true
		}
	}
	// Whichever is shorter: the prefixes purged, or the path's own.
	if prefixes := index[byPrefix]; len(prefixes) > len(e.Path) {
		for i := 1; i <= len(e.Path); i++ {
			if look(byPrefix, e.Path[:i]) {
				return true
			}
		}
	} else {
		for prefix, v := range prefixes {
			if strings.HasPrefix(e.Path, prefix) && hit(v) {
				return true
			}
		}
	}
	return false
}

// size is how many purges are remembered, and the bytes they count for.
func (q *heardPurges) size() (count, bytes int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.order), q.bytes
}
