package sharedcache

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
)

// pendingPurges are the purges the store has not confirmed: this replica's own, which it
// retries, and those other replicas published, which are forgotten purgeRetryFor after they
// were heard of. A confirmed purge is kept confirmedKept, so that a late copy of its message
// does not make it pending again.
type pendingPurges struct {
	mu       sync.Mutex
	byID     map[string]*pendingPurge // guarded by mu
	open     int                      // guarded by mu: how many are not confirmed
	retrying bool                     // guarded by mu: retryLoop runs
	swept    time.Time                // guarded by mu: when forgetLocked last looked
}

const confirmedKept = time.Minute

type pendingPurge struct {
	Purge
	id    string
	own   bool // this replica's: it publishes it, and retries it once it failed
	heard time.Time
	// published, confirmed: the other replicas heard of it, the store is purged (at
	// confirmedAt); failed: its first try did not confirm it (retryLoop's from then on).
	// Guarded by pendingPurges.mu.
	published, confirmed, failed bool
	confirmedAt                  time.Time
}

// add notes a purge heard of (or made, own) and returns it; a purge already known is kept
// as it is.
func (q *pendingPurges) add(p Purge, id string, own bool) *pendingPurge {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	q.forgetLocked(now)
	if pp, ok := q.byID[id]; ok {
		return pp
	}
	if q.byID == nil {
		q.byID = map[string]*pendingPurge{}
	}
	pp := &pendingPurge{Purge: p, id: id, own: own, heard: now}
	q.byID[id] = pp
	q.open++
	return pp
}

// forgetLocked drops, once a second at most, the purges confirmed confirmedKept ago, and
// the other replicas' heard of purgeRetryFor ago (retryLoop gives up on this replica's own).
func (q *pendingPurges) forgetLocked(now time.Time) {
	if now.Sub(q.swept) < time.Second {
		return
	}
	q.swept = now
	for id, pp := range q.byID {
		switch {
		case pp.confirmed && now.Sub(pp.confirmedAt) > confirmedKept:
		case !pp.confirmed && !pp.own && now.Sub(pp.heard) > purgeRetryFor:
			q.open--
		default:
			continue
		}
		delete(q.byID, id)
	}
}

func (q *pendingPurges) confirm(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if pp, ok := q.byID[id]; ok && !pp.confirmed {
		pp.confirmed, pp.confirmedAt = true, time.Now()
		q.open--
	}
}

func (q *pendingPurges) published(pp *pendingPurge) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return pp.published
}

func (q *pendingPurges) markPublished(pp *pendingPurge) {
	q.mu.Lock()
	defer q.mu.Unlock()
	pp.published = true
}

func (q *pendingPurges) matches(e *htmlcache.Entry) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.open == 0 {
		return false
	}
	for _, pp := range q.byID {
		if !pp.confirmed && (pp.own || time.Since(pp.heard) <= purgeRetryFor) && pp.Matches(e) {
			return true
		}
	}
	return false
}

// unconfirmed returns this replica's own purges whose first try failed and that the store
// has not confirmed since, oldest first.
func (q *pendingPurges) unconfirmed() []*pendingPurge {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.forgetLocked(time.Now())
	var own []*pendingPurge
	for _, pp := range q.byID {
		if pp.own && pp.failed && !pp.confirmed {
			own = append(own, pp)
		}
	}
	slices.SortFunc(own, func(a, b *pendingPurge) int { return a.heard.Compare(b.heard) })
	if len(own) == 0 {
		q.retrying = false
	}
	return own
}

// retry hands pp, whose first try failed, to retryLoop, and starts it unless it runs.
func (q *pendingPurges) retry(s *Store, pp *pendingPurge) {
	q.mu.Lock()
	defer q.mu.Unlock()
	pp.failed = true
	if !q.retrying {
		q.retrying = true
		go q.retryLoop(s)
	}
}

// retryLoop applies this replica's unconfirmed purges, oldest first, until none is left:
// after a failure, it waits (retryFirst, doubling up to retryMax) and starts over.
func (q *pendingPurges) retryLoop(s *Store) {
	delay := retryFirst
	for {
		time.Sleep(delay)
		own := q.unconfirmed()
		if len(own) == 0 {
			return
		}
		failed := false
		for _, pp := range own {
			if time.Since(pp.heard) > purgeRetryFor {
				s.opts.Log.Error("shared cache: purge given up: the store did not take it in time; documents it names may be served from the store until they expire",
					"kind", pp.Kind, "value", pp.Value, "retried_for", purgeRetryFor.String())
				q.confirm(pp.id)
				continue
			}
			if _, err := s.apply(context.Background(), pp); err != nil {
				if errors.Is(err, redis.ErrClosed) {
					q.stop()
					return
				}
				failed = true
				break
			}
			s.opts.Log.Info("shared cache: purge applied to the store after a failure", "kind", pp.Kind, "value", pp.Value,
				"after", time.Since(pp.heard).Round(time.Millisecond).String())
		}
		if failed {
			delay = min(2*delay, retryMax)
		} else {
			delay = retryFirst
		}
	}
}

func (q *pendingPurges) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.retrying = false
}
