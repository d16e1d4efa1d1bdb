package sharedcache

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// streamLength bounds the purge stream (XADD MAXLEN ~): a purge and its Done take an
	// entry each, so it holds about as many purges as a replica remembers.
	streamLength = 2 * maxHeardPurges
	// messageField names the field of a stream entry that holds its message.
	messageField = "m"
	// purgePoll is how often a replica reads the stream with no message on the channel to
	// wake it: how late it hears of a purge whose message it did not get.
	purgePoll = time.Second
	// wakeSpacing is the least time between two reads woken by the channel, on which any
	// client of the store may publish: a flood of messages costs a read per wakeSpacing.
	wakeSpacing = 10 * time.Millisecond
	// readBatch and positionPage are how many entries one call reads, on the way and when
	// a replica takes its position at the stream's end.
	readBatch, positionPage = 200, 500
	// positionBytes bounds what a replica reads to take its position: the entries of
	// maxHeardBytes' worth of purges, and as much again for Done and refused entries.
	positionBytes = 2 * maxHeardBytes
)

// Why a replica emptied its own cache, in the order of Store.counts.drops.
const (
	dropGap   = iota // the stream no longer holds entries it had not read
	dropReset        // the stream is gone: the store restarted empty, or was flushed
	dropReasons
)

var dropLabels = [dropReasons]string{"gap", "reset"}

// Subscribe calls apply with every purge another replica makes, until ctx is done (this
// replica's own are applied by its caller), and with Purge{Kind: "all"} when this replica
// may have missed some: its caller then empties its own cache. It reads the purge stream
// from the last entry it read, woken by the purges channel and every purgePoll otherwise: a
// replica that was away (its subscription dropped, the network cut, the store restarted)
// reads what it missed once it is back. When the stream no longer holds all it missed
// (trimmed past the last entry it read, or gone), it cannot tell what it missed: that is
// the "all", counted (edge_shared_cache_local_drops_total).
//
// The purges this replica has read, and its own, refuse the store's copies they match
// (Get, Pending). Without Options.HMACKey, any client of the store can write a purge.
func (s *Store) Subscribe(ctx context.Context, apply func(Purge)) {
	f := &follower{s: s, apply: apply}
	tick := time.NewTicker(purgePoll)
	defer tick.Stop()
	// The position is taken before the subscription: a purge published once it is in place
	// comes after the position, and is read.
	for {
		err := f.position(ctx, s.started)
		if err == nil {
			break
		}
		if errors.Is(err, redis.ErrClosed) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	sub := s.rdb.Subscribe(ctx, s.opts.Prefix+"purges")
	defer sub.Close()
	wake := sub.Channel()
	for {
		if errors.Is(f.read(ctx), redis.ErrClosed) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case _, ok := <-wake:
			if !ok {
				return
			}
			time.Sleep(wakeSpacing)
			for len(wake) > 0 {
				<-wake
			}
		}
	}
}

// follower reads the purge stream for Subscribe.
type follower struct {
	s     *Store
	apply func(Purge)
	last  string // the ID of the last entry read
}

// position reads the stream's last entries into the store's memory of purges, and takes
// the position after them. It applies those made since since (less clockSlack): what this
// replica may have cached before its position. A zero since applies none.
func (f *follower) position(ctx context.Context, since time.Time) error {
	c := f.s.purgeClient()
	if c == nil {
		return redis.ErrClosed
	}
	var entries []redis.XMessage // newest first
	end, size := "+", 0
	for len(entries) < streamLength && size < positionBytes {
		page, err := withCallTimeout(ctx, func(ctx context.Context) ([]redis.XMessage, error) {
			return c.XRevRangeN(ctx, f.s.streamKey(), end, "-", positionPage).Result()
		})
		if err != nil {
			return err
		}
		for _, x := range page {
			payload, _ := x.Values[messageField].(string)
			size += len(payload)
		}
		entries = append(entries, page...)
		if len(page) < positionPage {
			break
		}
		end = "(" + page[len(page)-1].ID
	}
	if len(entries) == 0 {
		// An empty stream gets an entry (a Done that confirms nothing) to take the position
		// at: were the stream to go, or to come back, the position would show it.
		id, err := withCallTimeout(ctx, func(ctx context.Context) (string, error) {
			return c.XAdd(ctx, f.s.addArgs(f.s.payload(message{ID: newPurgeID(), At: time.Now().UnixNano(), Done: true}))).Result()
		})
		f.last = id
		return err
	}
	f.last = entries[0].ID
	for i := len(entries) - 1; i >= 0; i-- {
		f.take(entries[i], func(m message) bool { return !since.IsZero() && m.made().After(since.Add(-clockSlack)) })
	}
	return nil
}

// read takes the entries after the last one read, and checks first that the stream still
// holds them all.
func (f *follower) read(ctx context.Context) error {
	c := f.s.purgeClient()
	if c == nil {
		return redis.ErrClosed
	}
	for {
		var first, next *redis.XMessageSliceCmd
		_, err := withCallTimeout(ctx, func(ctx context.Context) ([]redis.Cmder, error) {
			// One transaction: no trim comes between the check and the read.
			return c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				first = p.XRangeN(ctx, f.s.streamKey(), "-", "+", 1)
				next = p.XRangeN(ctx, f.s.streamKey(), "("+f.last, "+", readBatch)
				return nil
			})
		})
		if err != nil {
			return err // the store is away: the next tick tries again
		}
		switch oldest := first.Val(); {
		case len(oldest) == 0:
			return f.drop(ctx, dropReset)
		case idBefore(f.last, oldest[0].ID):
			return f.drop(ctx, dropGap)
		}
		for _, x := range next.Val() {
			f.take(x, func(message) bool { return true })
			f.last = x.ID
		}
		if len(next.Val()) < readBatch {
			return nil
		}
	}
}

// drop takes the position at the stream's end again, and has the caller empty its own
// cache: this replica cannot tell which purges it missed.
func (f *follower) drop(ctx context.Context, reason int) error {
	last := f.last
	if err := f.position(ctx, time.Time{}); err != nil {
		return err // the next read finds the same gap
	}
	f.apply(Purge{Kind: "all"})
	f.s.counts.drops[reason].Add(1)
	f.s.opts.Log.Warn("shared cache: purges may have been missed: this replica's own cache emptied",
		"reason", dropLabels[reason], "last_read", last, "position", f.last)
	return nil
}

// take notes the entry x: a purge is remembered, and applied if it is new and applies says
// so; a Done confirms its purge; anything else is refused.
func (f *follower) take(x redis.XMessage, applies func(message) bool) {
	payload, _ := x.Values[messageField].(string)
	m, err := parseMessage(payload, f.s.streamKey(), f.s.opts.HMACKey)
	if err != nil {
		f.s.refuse(x.ID, err)
		return
	}
	if m.Done {
		f.s.heard.confirm(m.ID)
		return
	}
	_, added, forgot := f.s.heard.add(m.Purge(), m.ID, m.made(), false)
	f.s.forgot(forgot)
	if added && applies(m) {
		f.apply(m.Purge())
	}
}

// withCallTimeout runs call within purgeCallTimeout. The client's own timeouts are not
// enough for a pipeline: on a new connection to a busy store, go-redis waits for it as long
// as the context lets it.
func withCallTimeout[T any](ctx context.Context, call func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, purgeCallTimeout)
	defer cancel()
	return call(ctx)
}

// idBefore reports whether the stream entry ID a comes before b. An ID that is not one
// (the store never answers such) comes before anything: a gap, not a purge missed unseen.
func idBefore(a, b string) bool {
	aMS, aSeq, aOK := parseID(a)
	bMS, bSeq, bOK := parseID(b)
	if !aOK || !bOK {
		return true
	}
	return aMS < bMS || aMS == bMS && aSeq < bSeq
}

func parseID(id string) (ms, seq uint64, ok bool) {
	msText, seqText, found := strings.Cut(id, "-")
	ms, msErr := strconv.ParseUint(msText, 10, 64)
	seq, seqErr := strconv.ParseUint(seqText, 10, 64)
	return ms, seq, found && msErr == nil && seqErr == nil
}
