package sharedcache

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
)

// How the store holds what purges need, beside each document ("doc:" + cache key):
//
//   - "ix:path:" + path and "ix:tag:" + tag: sorted sets of the cache keys of the documents
//     of that path or tag, each scored with its document's expiry (ms, the store's clock),
//     so that expired members are pruned on every write (addIndexes) and purge;
//   - "ix:of:" + cache key: the set of the indexes naming that document, so that a purge
//     removes the documents it deletes from every index, not only the one it walked;
//   - "purgelog": the purge stream (message), its last streamLength entries, which every
//     replica reads (follow.go), within PurgeLogOptions. Each entry is also published on
//     the "purges" channel, where it wakes the readers (listen.go), and replicas of earlier
//     versions hear it.
//
// The indexes of earlier versions ("path:", "tag:", sets) are not read: their documents
// are keyed by another build and never served by this version, and they expire with them.

// Purge is one purge, as the admin endpoint takes it: Kind is "key", "path", "prefix" or
// "tag". Subscribe also hands its caller Kind "all": every document of the replica's own
// cache, when it may have missed purges.
type Purge struct {
	Kind, Value string
}

// maxURLBytes bounds the value of a purge by key, path or prefix: edge.max_header_bytes'
// default, which bounds the request line a path comes from. maxTagBytes bounds a tag's: the
// renderer takes 256 characters (UTF-16) in a tag, 768 bytes of UTF-8 at most.
const (
	maxURLBytes = 64 << 10
	maxTagBytes = 3 * 256
)

// valid reports why p is no purge, or nil.
func (p Purge) valid() error {
	limit := maxURLBytes
	switch p.Kind {
	case "key", "path":
	case "tag":
		limit = maxTagBytes
	case "prefix":
		if p.Value == "" {
			return errors.New("sharedcache: an empty prefix (it would purge everything)")
		}
	default:
		return fmt.Errorf("sharedcache: purge kind %q (want key, path, prefix or tag)", p.Kind)
	}
	if len(p.Value) > limit {
		return fmt.Errorf("sharedcache: a purge by %s of %d bytes, over %d", p.Kind, len(p.Value), limit)
	}
	if !utf8.ValidString(p.Value) {
		// JSON would change it on the way: the other replicas would purge something else.
		return fmt.Errorf("sharedcache: a purge by %s of %q, not UTF-8", p.Kind, p.Value)
	}
	return nil
}

const (
	// purgeTimeout bounds a purge as its caller waits for it: the publish, then the deletes.
	purgeTimeout = 5 * time.Second
	// purgeCallTimeout bounds each of a purge's calls to the store (not Options.Timeout,
	// which a page's calls keep short): a busy store still takes a purge.
	purgeCallTimeout = time.Second
	// purgeRetryFor is how long a purge the store has not confirmed is retried in the
	// background, and its documents in the store refused by every replica that heard of it.
	purgeRetryFor = 10 * time.Minute
	// retryFirst and retryMax bound the backoff between retries: a store that comes back is
	// purged within about retryMax.
	retryFirst, retryMax = 100 * time.Millisecond, time.Second
	// purgeBatch is how many documents one call of a purge deletes.
	purgeBatch = 500
)

// Purge publishes p to every replica (Subscribe), which remove its documents from their own
// caches, then removes them from the store, in batches. It returns how many documents it
// removed from the store.
//
// The publish and the deletes are independent: the replicas hear of p even when the
// deletes fail. Until the store has confirmed p (the publish and the deletes both
// succeeded), p is pending: every replica that heard of it, this one at once, refuses the
// store's copies p matches (Pending). When either fails, Purge returns an error, and goes on
// in the background, with backoff, until the store confirms p (purgeRetryFor at most).
// Purge does not go through the circuit: an admin's purge tries the store even while page
// requests skip it.
func (s *Store) Purge(ctx context.Context, p Purge) (int, error) {
	if err := p.valid(); err != nil {
		return 0, err
	}
	// What the other replicas would refuse (Subscribe) is not written.
	if n := len(messageField) + len(s.payload(message{Kind: p.Kind, Value: p.Value, ID: newPurgeID(), At: time.Now().UnixNano()})); n > s.opts.PurgeLog.MaxEntryBytes {
		return 0, fmt.Errorf("sharedcache: a purge by %s of %d bytes on the purge stream, over its entry limit of %d (PurgeLogOptions.MaxEntryBytes)",
			p.Kind, n, s.opts.PurgeLog.MaxEntryBytes)
	}
	pp, _, forgot := s.heard.add(p, newPurgeID(), time.Now(), true)
	s.forgot(forgot)
	n, err := s.apply(ctx, pp)
	if err != nil {
		s.retry(pp)
	}
	return n, err
}

// apply publishes pp (unless it was before), removes its documents from the store, and,
// when both succeeded, confirms it (and publishes that).
func (s *Store) apply(ctx context.Context, pp *heardPurge) (int, error) {
	c := s.purgeClient()
	if c == nil {
		return 0, redis.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, purgeTimeout)
	defer cancel()
	var published error
	if !s.heard.published(pp) {
		if published = s.publish(ctx, c, message{Kind: pp.Kind, Value: pp.Value, ID: pp.id, At: pp.at.UnixNano()}); published == nil {
			s.heard.markPublished(pp)
		} else {
			published = fmt.Errorf("sharedcache: purge not published to the other replicas: %w", published)
		}
	}
	n, removed := s.remove(ctx, c, pp.Purge)
	if removed != nil {
		removed = fmt.Errorf("sharedcache: purge not applied to the store (%d documents removed): %w", n, removed)
	}
	if err := errors.Join(published, removed); err != nil {
		return n, err
	}
	s.heard.confirmOwn(pp)
	// Best effort: a replica that misses it stops refusing copies purgeRetryFor after it
	// heard of pp.
	s.publish(ctx, c, message{ID: pp.id, At: pp.at.UnixNano(), Done: true})
	return n, nil
}

// publish appends m, signed, to the purge stream, and wakes its readers.
func (s *Store) publish(ctx context.Context, c *redis.Client, m message) error {
	payload := s.payload(m)
	_, err := withCallTimeout(ctx, func(ctx context.Context) ([]redis.Cmder, error) {
		return c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.XAdd(ctx, s.addArgs(payload))
			p.Publish(ctx, s.opts.Prefix+"purges", payload)
			return nil
		})
	})
	return err
}

// payload is m as the stream and the channel carry it: signed with Options.HMACKey.
func (s *Store) payload(m message) string { return m.signed(s.streamKey(), s.opts.HMACKey).encode() }

// addArgs append payload to the purge stream.
func (s *Store) addArgs(payload string) *redis.XAddArgs {
	return &redis.XAddArgs{Stream: s.streamKey(), MaxLen: streamLength, Approx: true, Values: []any{messageField, payload}}
}

// remove deletes p's documents from the store and returns how many there were.
func (s *Store) remove(ctx context.Context, c *redis.Client, p Purge) (int, error) {
	switch p.Kind {
	case "key":
		removed, _, _, err := s.purgeBatch(ctx, c, "", p.Value)
		return removed, err
	case "path", "tag":
		return s.purgeIndex(ctx, c, s.opts.Prefix+"ix:"+p.Kind+":"+p.Value)
	}
	// A prefix: every path index under it.
	indexes, err := s.scan(ctx, c, globEscape(s.opts.Prefix+"ix:path:"+p.Value)+"*")
	n := 0
	for _, index := range indexes {
		removed, ierr := s.purgeIndex(ctx, c, index)
		n += removed
		if ierr != nil {
			return n, ierr
		}
	}
	return n, err
}

// purgeIndex deletes every document index names, purgeBatch at a time, and empties it.
// Documents added to it meanwhile (renders after the purge) may be deleted too; it stops once
// it walked as many members as the index held at first.
func (s *Store) purgeIndex(ctx context.Context, c *redis.Client, index string) (int, error) {
	n, limit := 0, -1
	for walked := 0; limit < 0 || walked < limit; {
		removed, took, left, err := s.purgeBatch(ctx, c, index)
		n += removed
		if err != nil {
			return n, err
		}
		if limit < 0 {
			limit = took + left
		}
		if took == 0 || left == 0 {
			return n, nil
		}
		walked += took
	}
	return n, nil
}

// purgeBatch runs purgeScript once: the first purgeBatch members of index (none if empty)
// and keys. It returns how many documents it removed, how many it walked in index, and how
// many members index has left.
func (s *Store) purgeBatch(ctx context.Context, c *redis.Client, index string, keys ...string) (removed, walked, left int, err error) {
	args := make([]any, 0, 3+len(keys))
	args = append(args, s.opts.Prefix, index, purgeBatch)
	for _, k := range keys {
		args = append(args, k)
	}
	res, err := purgeScript.Run(ctx, c, nil, args...).Int64Slice()
	if err != nil {
		return 0, 0, 0, err
	}
	if len(res) != 3 {
		return 0, 0, 0, fmt.Errorf("sharedcache: the purge script answered %v", res)
	}
	return int(res[0]), int(res[1]), int(res[2]), nil
}

// purgeScript deletes documents and every index entry naming them, in one call. ARGV[1] is
// the key prefix, ARGV[2] an index whose first ARGV[3] members to take ("": none), ARGV[4:]
// more cache keys. It first prunes the index's expired members, and last those of every
// index it touched. It answers {documents removed, members walked, members left}.
var purgeScript = redis.NewScript(`
local prefix, walked, batch = ARGV[1], ARGV[2], tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local keys = {}
if walked ~= '' then
  redis.call('ZREMRANGEBYSCORE', walked, '-inf', now)
  keys = redis.call('ZRANGE', walked, 0, batch - 1)
end
local took = #keys
for i = 4, #ARGV do keys[#keys + 1] = ARGV[i] end
local removed, touched = 0, {}
for _, key in ipairs(keys) do
  local of = prefix .. 'ix:of:' .. key
  for _, index in ipairs(redis.call('SMEMBERS', of)) do
    redis.call('ZREM', index, key)
    touched[index] = true
  end
  if walked ~= '' then redis.call('ZREM', walked, key) end
  removed = removed + redis.call('UNLINK', prefix .. 'doc:' .. key)
  redis.call('UNLINK', of)
end
for index in pairs(touched) do
  redis.call('ZREMRANGEBYSCORE', index, '-inf', now)
end
local left = 0
if walked ~= '' then left = redis.call('ZCARD', walked) end
return {removed, took, left}
`)

// indexScript adds a document to its indexes (in Set's transaction): KEYS[1] is its
// "ix:of:" set, KEYS[2:] its indexes; ARGV[1] its cache key, ARGV[2] its life in ms. Each
// index scores it with its expiry, drops its expired members, and lives as long as its
// longest-lived member.
const indexScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local life = tonumber(ARGV[2])
for i = 2, #KEYS do
  redis.call('ZADD', KEYS[i], now + life, ARGV[1])
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
  if redis.call('PTTL', KEYS[i]) < life then redis.call('PEXPIRE', KEYS[i], life) end
  redis.call('SADD', KEYS[1], KEYS[i])
end
if redis.call('PTTL', KEYS[1]) < life then redis.call('PEXPIRE', KEYS[1], life) end
return 0
`

// addIndexes queues, in Set's transaction p, the entries of e's path and tags indexes: e
// lives for life in the store.
func (s *Store) addIndexes(ctx context.Context, p redis.Pipeliner, e *htmlcache.Entry, life time.Duration) {
	keys := make([]string, 0, 2+len(e.Tags))
	keys = append(keys, s.opts.Prefix+"ix:of:"+e.Key, s.opts.Prefix+"ix:path:"+e.Path)
	for _, tag := range e.Tags {
		keys = append(keys, s.opts.Prefix+"ix:tag:"+tag)
	}
	p.Eval(ctx, indexScript, keys, e.Key, max(life.Milliseconds(), 1))
}

// scan lists the keys matching pattern.
func (s *Store) scan(ctx context.Context, c *redis.Client, pattern string) ([]string, error) {
	var keys []string
	iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	return keys, iter.Err()
}

// globEscape makes s match itself, byte for byte, in a Redis glob pattern (SCAN's MATCH).
func globEscape(s string) string {
	var b strings.Builder
	for i := range len(s) {
		if strings.IndexByte(`*?[]\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// purgeClient is the client of purges: its own pool, with purgeCallTimeout for each call
// instead of the page calls' short Options.Timeout. Nil once the Store is closed.
func (s *Store) purgeClient() *redis.Client {
	s.purgerOnce.Do(func() { s.purger = redis.NewClient(s.purgerOptions) })
	return s.purger
}

// closePurges stops the purges: no purge client from now on, and the one there was closed
// (the retries end with it).
func (s *Store) closePurges() error {
	s.purgerOnce.Do(func() {})
	if s.purger == nil {
		return nil
	}
	return s.purger.Close()
}

func newPurgeID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
