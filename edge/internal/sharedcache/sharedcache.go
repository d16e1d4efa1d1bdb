// Package sharedcache is the HTML cache's second level: stored documents in Redis or Valkey,
// shared by every edge replica, so that a page one replica rendered is a hit on the others,
// and a short lock in the store so that a cold key is rendered once across replicas. Every
// call is bounded by a timeout and a circuit: a slow, full or absent store costs a request at
// most one timeout, and then nothing while the circuit is open; the edge goes on with its
// own cache and the renderer.
package sharedcache

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/circuit"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
)

// Options configure a Store.
type Options struct {
	// Address is a redis:// or rediss:// URL, or unix:///path for a socket.
	Address string
	// Timeout bounds every call, dialing included. If zero, defaults to 25 ms: a hit must stay
	// cheaper than a render.
	Timeout time.Duration
	// LockTTL is how long a render lock lives if its holder never releases it (it crashed).
	// If zero, defaults to 10 s.
	LockTTL time.Duration
	// Prefix namespaces the store's keys, so that several sites can share one store. If
	// empty, defaults to "ssr:".
	Prefix string
}

// ErrUnavailable is returned while the circuit is open: the store failed several calls in a
// row and is not called again until a probe call succeeds.
var ErrUnavailable = errors.New("sharedcache: the store is unavailable (circuit open)")

// Store is the shared cache. Its methods are safe for concurrent use.
type Store struct {
	rdb     *redis.Client
	opts    Options
	breaker *circuit.Breaker
}

// New returns a Store for opts.Address; it does not connect until the first call.
func New(opts Options) (*Store, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 25 * time.Millisecond
	}
	if opts.LockTTL == 0 {
		opts.LockTTL = 10 * time.Second
	}
	if opts.Prefix == "" {
		opts.Prefix = "ssr:"
	}
	ro, err := redis.ParseURL(opts.Address)
	if err != nil {
		return nil, fmt.Errorf("sharedcache: address %q: %w", opts.Address, err)
	}
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout, ro.PoolTimeout = opts.Timeout, opts.Timeout, opts.Timeout, opts.Timeout
	ro.ContextTimeoutEnabled = true
	// A retry would double the time a request waits for a store that is failing.
	ro.MaxRetries, ro.DialerRetries = -1, 1
	redis.SetLogger(debugLog{})
	return &Store{rdb: redis.NewClient(ro), opts: opts, breaker: &circuit.Breaker{OpenFor: time.Second}}, nil
}

// debugLog sends go-redis's own messages (a dial that failed, for one) to slog at debug
// level: failing calls already show in the edge's metrics and are handled by the circuit.
type debugLog struct{}

func (debugLog) Printf(ctx context.Context, format string, v ...any) {
	slog.DebugContext(ctx, "shared cache: "+fmt.Sprintf(format, v...))
}

// Close closes the store's connections.
func (s *Store) Close() error { return s.rdb.Close() }

// purgeTimeout bounds a purge: an admin's call, which may scan the store's keys.
const purgeTimeout = 5 * time.Second

// do runs one call within the timeout and the circuit. A miss (redis.Nil) is an answer, not a
// failure.
func (s *Store) do(ctx context.Context, call func(ctx context.Context) error) error {
	return s.within(ctx, s.opts.Timeout, call)
}

// within is do with another timeout.
func (s *Store) within(ctx context.Context, timeout time.Duration, call func(ctx context.Context) error) error {
	if !s.breaker.Allow(time.Now()) {
		return ErrUnavailable
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := call(ctx)
	s.breaker.Record(time.Now(), err != nil && !errors.Is(err, redis.Nil))
	return err
}

// wireEntry is a stored document as the store holds it.
type wireEntry struct {
	Key, Path, ETag                         string
	Tags                                    []string
	Status                                  int
	Header                                  http.Header
	Bodies                                  map[string][]byte
	NonceAt                                 []int
	Stored                                  time.Time
	TTL, StaleWhileRevalidate, StaleIfError time.Duration
}

// value reads one value: nil when the store has none.
func (s *Store) value(ctx context.Context, key string) ([]byte, error) {
	var b []byte
	err := s.do(ctx, func(ctx context.Context) (err error) {
		b, err = s.rdb.Get(ctx, key).Bytes()
		return err
	})
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return b, err
}

// Get returns the stored document for key, or nil when the store has none.
func (s *Store) Get(ctx context.Context, key string) (*htmlcache.Entry, error) {
	b, err := s.value(ctx, s.opts.Prefix+"doc:"+key)
	if b == nil || err != nil {
		return nil, err
	}
	var w wireEntry
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&w); err != nil {
		return nil, fmt.Errorf("sharedcache: %s: undecodable entry: %w", key, err)
	}
	return &htmlcache.Entry{
		Key: w.Key, Path: w.Path, Tags: w.Tags, ETag: w.ETag, Status: w.Status, Header: w.Header, Bodies: w.Bodies,
		NonceAt: w.NonceAt, Stored: w.Stored, TTL: w.TTL, StaleWhileRevalidate: w.StaleWhileRevalidate, StaleIfError: w.StaleIfError,
	}, nil
}

// Set stores e until it can no longer be used even stale. Hit-for-miss markers stay in each
// replica's own cache: they are not stored.
func (s *Store) Set(ctx context.Context, e *htmlcache.Entry) error {
	if e.Pass {
		return nil
	}
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(wireEntry{
		Key: e.Key, Path: e.Path, Tags: e.Tags, ETag: e.ETag, Status: e.Status, Header: e.Header, Bodies: e.Bodies,
		NonceAt: e.NonceAt, Stored: e.Stored, TTL: e.TTL, StaleWhileRevalidate: e.StaleWhileRevalidate, StaleIfError: e.StaleIfError,
	})
	if err != nil {
		return fmt.Errorf("sharedcache: %s: %w", e.Key, err)
	}
	usable := e.TTL + max(e.StaleWhileRevalidate, e.StaleIfError) - time.Since(e.Stored)
	if usable <= 0 {
		return nil
	}
	// The path's and the tags' indexes let a purge by path, prefix or tag find every
	// document it names; each lives as long as the longest-lived document in it (EXPIRE NX
	// sets it once, GT extends it).
	indexes := []string{s.opts.Prefix + "path:" + e.Path}
	for _, tag := range e.Tags {
		indexes = append(indexes, s.opts.Prefix+"tag:"+tag)
	}
	return s.do(ctx, func(ctx context.Context) error {
		_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, s.opts.Prefix+"doc:"+e.Key, b.Bytes(), usable)
			for _, index := range indexes {
				p.SAdd(ctx, index, e.Key)
				p.ExpireNX(ctx, index, usable)
				p.ExpireGT(ctx, index, usable)
			}
			return nil
		})
		return err
	})
}

// assetTimeout bounds the upload of one of a build's files.
const assetTimeout = 30 * time.Second

// PutAsset stores one of the client build's files for ttl. Their names are content hashes:
// a name means the same bytes in every build, so any build's edge can serve it.
func (s *Store) PutAsset(ctx context.Context, name string, body []byte, ttl time.Duration) error {
	return s.within(ctx, assetTimeout, func(ctx context.Context) error {
		return s.rdb.Set(ctx, s.opts.Prefix+"asset:"+name, body, ttl).Err()
	})
}

// Asset returns a file some build stored (PutAsset), or nil when none did.
func (s *Store) Asset(ctx context.Context, name string) ([]byte, error) {
	return s.value(ctx, s.opts.Prefix+"asset:"+name)
}

// Purge is one purge, as the admin endpoint takes it: Kind is "key", "path", "prefix" or
// "tag".
type Purge struct {
	Kind, Value string
}

// Purge removes the documents p names from the store and tells every replica subscribed
// (Subscribe) to remove them from its own cache. It returns how many documents it removed.
func (s *Store) Purge(ctx context.Context, p Purge) (int, error) {
	msg, err := json.Marshal(p)
	if err != nil {
		return 0, err
	}
	n := 0
	err = s.within(ctx, purgeTimeout, func(ctx context.Context) error {
		var docs []string
		switch p.Kind {
		case "key":
			docs = []string{p.Value}
		case "path", "prefix", "tag":
			// The index of the path or the tag; a prefix, every path index under it.
			indexes := []string{s.opts.Prefix + p.Kind + ":" + p.Value}
			if p.Kind == "prefix" {
				var err error
				if indexes, err = s.scan(ctx, s.opts.Prefix+"path:"+globEscape(p.Value)+"*"); err != nil {
					return err
				}
			}
			for _, index := range indexes {
				keys, err := s.rdb.SMembers(ctx, index).Result()
				if err != nil {
					return err
				}
				docs = append(docs, keys...)
				s.rdb.Del(ctx, index)
			}
		default:
			return fmt.Errorf("sharedcache: purge kind %q (want key, path, prefix or tag)", p.Kind)
		}
		for _, key := range docs {
			removed, err := s.rdb.Del(ctx, s.opts.Prefix+"doc:"+key).Result()
			if err != nil {
				return err
			}
			n += int(removed)
		}
		return s.rdb.Publish(ctx, s.opts.Prefix+"purges", msg).Err()
	})
	return n, err
}

// scan lists the keys matching pattern.
func (s *Store) scan(ctx context.Context, pattern string) ([]string, error) {
	var keys []string
	iter := s.rdb.Scan(ctx, 0, pattern, 256).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	return keys, iter.Err()
}

// globEscape makes s match itself in a Redis glob pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Subscribe calls apply with every purge any replica publishes, until ctx is done. The
// subscription reconnects by itself after the store comes back; purges published while it
// was away are lost to this replica's own cache, whose entries then live out their TTL.
func (s *Store) Subscribe(ctx context.Context, apply func(Purge)) {
	sub := s.rdb.Subscribe(ctx, s.opts.Prefix+"purges")
	defer sub.Close()
	ch := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			var p Purge
			if json.Unmarshal([]byte(m.Payload), &p) == nil {
				apply(p)
			}
		}
	}
}

// release deletes a lock only if it still holds this holder's token: a lock that expired
// and was taken by another replica is not theirs to release.
var release = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

// Lock tries to become the one replica that renders key. It does not wait: acquired false
// means another replica holds the lock (and will store the result). unlock releases it.
func (s *Store) Lock(ctx context.Context, key string) (unlock func(), acquired bool, err error) {
	var token [12]byte
	rand.Read(token[:])
	holder := hex.EncodeToString(token[:])
	lockKey := s.opts.Prefix + "lock:" + key
	err = s.do(ctx, func(ctx context.Context) (err error) {
		acquired, err = s.rdb.SetNX(ctx, lockKey, holder, s.opts.LockTTL).Result()
		return err
	})
	if err != nil || !acquired {
		return func() {}, false, err
	}
	return func() {
		s.do(context.Background(), func(ctx context.Context) error {
			return release.Run(ctx, s.rdb, []string{lockKey}, holder).Err()
		})
	}, true, nil
}
