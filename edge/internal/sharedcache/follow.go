package sharedcache

import (
	"context"
	"errors"
	"fmt"
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
	// readBatch is how many entries one read takes at most; positionPage how many one call
	// walks back over when a replica takes its position at the stream's end.
	readBatch, positionPage = 200, 500
	// positionBytes bounds what a replica takes to take its position: the entries of
	// maxHeardBytes' worth of purges, and as much again for Done and refused entries. It
	// takes them a read (PurgeLogOptions.MaxReadBytes) at a time.
	positionBytes = 2 * maxHeardBytes
	// readHeader is what a read's reply holds beyond its entries (readScript): its entries
	// may hold MaxReadBytes less this.
	readHeader = 4*elementCost + 128
)

// Why a replica emptied its own cache, in the order of Store.counts.drops and lost.
const (
	dropGap   = iota // the stream no longer holds entries it had not read
	dropReset        // the stream is gone: the store restarted empty, or was flushed
	dropReasons
)

var dropLabels = [dropReasons]string{"gap", "reset"}

// Subscribe calls apply with every purge another replica makes, until ctx is done or the
// Store is closed (this replica's own are applied by its caller), and with
// Purge{Kind: "all"} when this replica may have missed some: its caller then empties its own
// cache. It reads the purge stream from the last entry it read, woken by the purges channel
// and every purgePoll otherwise: a replica that was away (its subscription dropped, the
// network cut, the store restarted) reads what it missed once it is back. When the stream
// no longer holds all it missed (trimmed past the last purge it read, or gone), it cannot
// tell what it missed: that is the "all". Each such loss is counted
// (edge_shared_cache_purge_stream_losses_total), and the "all" is made at most once per
// PurgeLogOptions.FlushInterval (edge_shared_cache_local_drops_total): a loss within it is
// made up for once it has passed.
//
// The purges this replica has read, and its own, refuse the store's copies they match
// (Get, Pending). Without Options.HMACKey, any client of the store can write a purge; with
// it, any client can still write entries, which are refused, and delete or trim the stream.
// Either way, what this replica holds of the stream stays within PurgeLogOptions: a read of
// MaxReadBytes at a time, each entry within MaxEntryBytes (a larger one is refused without
// being sent: readScript; and skipped unread should a store send it: respConn); and the
// messages of the channel are skipped unread (listen).
func (s *Store) Subscribe(ctx context.Context, apply func(Purge)) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := &follower{s: s, apply: apply}
	defer f.close()
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
	wake := make(chan struct{}, 1)
	go s.listen(ctx, wake)
	for {
		if errors.Is(f.read(ctx), redis.ErrClosed) {
			return
		}
		f.flushOwed()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-wake:
			time.Sleep(wakeSpacing)
			select { // the messages of the spacing are one wake
			case <-wake:
			default:
			}
		}
	}
}

// follower reads the purge stream for Subscribe.
type follower struct {
	s     *Store
	apply func(Purge)
	last  string // the ID of the last entry read
	// anchor is the ID of the last message read (a purge or a Done this replica took):
	// while the stream holds it, it holds every entry after it, since a trim takes the
	// oldest first. Checking that costs a copy of a message, where a check of the stream's
	// oldest entry would copy whatever any client of the store put there, at every read.
	anchor string
	conn   *respConn // the reads' connection: nil until one dials it, and once one broke it
	// flushed is when this replica last emptied its own cache for a loss of the stream;
	// owed says a loss since asks for another once FlushInterval has passed: owedFor is
	// why, losses how many there were, lastRead the last entry read before the first.
	flushed         time.Time
	owed            bool
	owedFor, losses int
	lastRead        string
}

// position finds the stream's last entries (positionBytes' worth, streamLength at most),
// reads them into the store's memory of purges, and takes the position after them. It
// applies those made since since (less clockSlack): what this replica may have cached
// before its position. A zero since applies none.
func (f *follower) position(ctx context.Context, since time.Time) error {
	// Walked back over (walkScript), then read forward, a read at a time.
	var newest, first string
	walked, size := 0, 0
	for end := "+"; walked < streamLength && size < positionBytes; {
		w, err := f.walk(ctx, end, min(positionPage, streamLength-walked), positionBytes-size)
		if err != nil {
			return err
		}
		if w.newest == "" {
			break
		}
		if newest == "" {
			newest = w.newest
		}
		first, walked, size = w.oldest, walked+w.walked, size+w.bytes
		if !w.more {
			break
		}
		end = "(" + w.oldest
	}
	anchor := ""
	applies := func(m message) bool { return !since.IsZero() && m.made().After(since.Add(-clockSlack)) }
	for start := first; newest != ""; {
		r, err := f.readRange(ctx, "", start, newest)
		if err != nil {
			return err
		}
		for _, x := range r.entries {
			if f.take(x, applies) {
				anchor = x.id
			}
		}
		if !r.more || len(r.entries) == 0 {
			break
		}
		start = "(" + r.entries[len(r.entries)-1].id
	}
	if anchor == "" {
		// A stream with no message (empty, or only refused entries) gets one (a Done that
		// confirms nothing) to anchor the position: were the stream to go, or to be trimmed
		// past it, the anchor would show it.
		c := f.s.purgeClient()
		if c == nil {
			return redis.ErrClosed
		}
		id, err := withCallTimeout(ctx, func(ctx context.Context) (string, error) {
			return c.XAdd(ctx, f.s.addArgs(f.s.payload(message{ID: newPurgeID(), At: time.Now().UnixNano(), Done: true}))).Result()
		})
		if err != nil {
			return err
		}
		anchor = id
		if newest == "" {
			newest = id
		}
	}
	f.last, f.anchor = newest, anchor
	return nil
}

// read takes the entries after the last one read, and checks first that the stream still
// holds them all.
func (f *follower) read(ctx context.Context) error {
	for {
		// One script: no trim comes between the check and the read.
		r, err := f.readRange(ctx, f.anchor, "("+f.last, "+")
		if err != nil {
			return err // the store is away: the next tick tries again
		}
		if r.lost >= 0 {
			return f.drop(ctx, r.lost)
		}
		for _, x := range r.entries {
			if f.take(x, func(message) bool { return true }) {
				f.anchor = x.id
			}
			f.last = x.id
		}
		if !r.more || len(r.entries) == 0 {
			return nil
		}
	}
}

// drop takes the position at the stream's end again, counts the loss, and has the caller
// empty its own cache (flushOwed): this replica cannot tell which purges it missed.
func (f *follower) drop(ctx context.Context, reason int) error {
	last := f.last
	if err := f.position(ctx, time.Time{}); err != nil {
		return err // the next read finds the same loss
	}
	f.s.counts.lost[reason].Add(1)
	f.losses++
	if !f.owed {
		f.owed, f.owedFor, f.lastRead = true, reason, last
		if wait := f.s.opts.PurgeLog.FlushInterval - time.Since(f.flushed); !f.flushed.IsZero() && wait > 0 {
			f.s.opts.Log.Warn("shared cache: purges may have been missed again within the flush interval: this replica's own cache is emptied once it has passed (the losses until then are only counted)",
				"reason", dropLabels[reason], "last_read", last, "position", f.last, "flush_in", wait.Round(time.Millisecond).String())
		}
	}
	f.flushOwed()
	return nil
}

// flushOwed has the caller empty its own cache if a loss of the stream asks for it and the
// last time was FlushInterval ago or more.
func (f *follower) flushOwed() {
	if !f.owed || !f.flushed.IsZero() && time.Since(f.flushed) < f.s.opts.PurgeLog.FlushInterval {
		return
	}
	f.apply(Purge{Kind: "all"})
	f.s.counts.drops[f.owedFor].Add(1)
	f.s.opts.Log.Warn("shared cache: purges may have been missed: this replica's own cache emptied",
		"reason", dropLabels[f.owedFor], "last_read", f.lastRead, "position", f.last, "losses", f.losses)
	f.flushed, f.owed, f.losses = time.Now(), false, 0
}

// take notes the entry x, and reports whether it is a message: a purge is remembered, and
// applied if it is new and applies says so; a Done confirms its purge; anything else is
// refused.
func (f *follower) take(x entry, applies func(message) bool) bool {
	if x.size > 0 {
		f.s.refuse(x.id, fmt.Errorf("%w: %d bytes", errTooLarge, x.size))
		return false
	}
	m, err := parseMessage(x.payload, f.s.streamKey(), f.s.opts.HMACKey)
	if err != nil {
		f.s.refuse(x.id, err)
		return false
	}
	if m.Done {
		f.s.heard.confirm(m.ID)
		return true
	}
	_, added, forgot := f.s.heard.add(m.Purge(), m.ID, m.made(), false)
	f.s.forgot(forgot)
	if added && applies(m) {
		f.apply(m.Purge())
	}
	return true
}
