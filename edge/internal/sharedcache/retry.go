package sharedcache

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// retry hands pp, this replica's own purge whose first try failed, to retryLoop, and starts
// it unless it runs.
func (s *Store) retry(pp *heardPurge) {
	q := &s.heard
	q.mu.Lock()
	defer q.mu.Unlock()
	pp.failed = true
	q.failed = append(q.failed, pp)
	if !q.retrying {
		q.retrying = true
		go s.retryLoop()
	}
}

// stillFailed returns this replica's own purges whose first try failed and that the store
// has not confirmed since, oldest first; none ends retryLoop.
func (q *heardPurges) stillFailed() []*heardPurge {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.failed = slices.DeleteFunc(q.failed, func(pp *heardPurge) bool { return !pp.failed })
	if len(q.failed) == 0 {
		q.retrying = false
	}
	return slices.Clone(q.failed)
}

func (q *heardPurges) stopRetrying() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.retrying = false
}

// retryLoop applies this replica's unconfirmed purges, oldest first, until none is left:
// after a failure, it waits (retryFirst, doubling up to retryMax) and starts over.
func (s *Store) retryLoop() {
	delay := retryFirst
	for {
		time.Sleep(delay)
		own := s.heard.stillFailed()
		if len(own) == 0 {
			return
		}
		failed := false
		for _, pp := range own {
			if time.Since(pp.heard) > purgeRetryFor {
				s.opts.Log.Error("shared cache: purge given up: the store did not take it in time; documents it names may be served from the store until they expire",
					"kind", pp.Kind, "value", pp.Value, "retried_for", purgeRetryFor.String())
				s.heard.confirmOwn(pp)
				continue
			}
			if _, err := s.apply(context.Background(), pp); err != nil {
				if errors.Is(err, redis.ErrClosed) {
					s.heard.stopRetrying()
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
