package sharedcache

import (
	"context"
	"fmt"
	"time"
)

// listenLimits bound what a replica holds of a message of the purges channel: its kind and
// channel; its payload, which any client of the store may publish, is skipped unread.
var listenLimits = respLimits{maxString: 256, maxBytes: 4 << 10}

// listen keeps a subscription to the purges channel until ctx is done or the Store is
// closed, and signals wake, without waiting, once subscribed and at each message: a message
// is only a wake, the purge stream says what it is (earlier versions read it; this one
// does not). A subscription the store refuses or drops is tried again every purgePoll; one
// gone silent is found by TCP keepalives. Meanwhile the follower reads every purgePoll.
func (s *Store) listen(ctx context.Context, wake chan<- struct{}) {
	signal := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	tick := time.NewTicker(purgePoll)
	defer tick.Stop()
	for ctx.Err() == nil && !s.closed.Load() {
		s.subscribed(ctx, signal)
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// subscribed subscribes to the purges channel and signals each message until the
// subscription fails or ctx is done.
func (s *Store) subscribed(ctx context.Context, signal func()) error {
	c, err := s.dialer.dial(ctx, purgeCallTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	v, err := c.call(ctx, purgeCallTimeout, listenLimits, "SUBSCRIBE", s.opts.Prefix+"purges")
	if err != nil {
		return err
	}
	if a, _ := v.([]any); len(a) != 3 || a[0] != "subscribe" {
		return fmt.Errorf("sharedcache: SUBSCRIBE answered %v", v)
	}
	c.conn.SetDeadline(time.Time{})
	signal() // for a purge written before the subscription was in place
	for {
		v, err := c.receive(listenLimits)
		if err != nil {
			return err
		}
		if a, _ := v.([]any); len(a) == 3 && a[0] == "message" {
			signal()
		}
	}
}
