// Package sharedcache is the HTML cache's second level: stored documents in Redis or Valkey,
// shared by every edge replica, so that a page one replica rendered is a hit on the others,
// and a short lock in the store so that a cold key is rendered once across replicas; beside
// it, the bus that takes a purge to every replica's own cache (bus.go). Every call is
// bounded by a timeout and a circuit: a slow, full or absent store costs a request at most
// one timeout, and then nothing while the circuit is open; the edge goes on with its own
// cache and the renderer.
package sharedcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/circuit"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
)

// Options configure a Store.
type Options struct {
	// Address is a redis:// or rediss:// (TLS) URL, redis://user:password@host:port/db, or
	// unix://user:password@/path for a socket. Errors and logs show it without its password
	// (Redact).
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
	// HMACKey, if set, authenticates what the store holds: each document carries, and each
	// asset has beside it, an HMAC-SHA256 of its bytes and of the key it is stored under,
	// and a value without a valid one is a miss; each purge carries one too, and a purge
	// without a valid one is refused. Every replica needs the same key, of at least 32
	// bytes. If empty, nothing is authenticated: whatever can write to the store can have
	// the edges serve any page or script, or purge every page (docs/operations.md, "Running
	// the shared store safely").
	HMACKey []byte
	// Log receives the first invalid value of each kind (document, asset), the first purge
	// refused for each reason, each time this replica empties its own cache because it may
	// have missed purges, and the first loss of the purge stream that waits for
	// PurgeLog.FlushInterval; the others are only counted. If nil, defaults to
	// slog.Default().
	Log *slog.Logger
	// PurgeLog bounds what this replica takes from the purge stream, which any client of the
	// store can write to, with or without HMACKey. Its zero value means the defaults.
	PurgeLog PurgeLogOptions
}

// minHMACKey is the shortest HMACKey New takes: SHA-256's output size (RFC 2104 §3).
const minHMACKey = 32

// ErrUnavailable is returned while the circuit is open: the store failed several calls in a
// row and is not called again until a probe call succeeds.
var ErrUnavailable = errors.New("sharedcache: the store is unavailable (circuit open)")

// Store is the shared cache. Its methods are safe for concurrent use.
type Store struct {
	rdb     *redis.Client
	opts    Options
	breaker *circuit.Breaker
	// loggedDoc and loggedAsset are set once an invalid value of the kind was logged.
	loggedDoc, loggedAsset atomic.Bool
	// purgeBus is how purges reach every replica (bus.go).
	purgeBus
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
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if n := len(opts.HMACKey); n > 0 && n < minHMACKey {
		return nil, fmt.Errorf("sharedcache: the HMAC key has %d bytes, want at least %d", n, minHMACKey)
	}
	opts.HMACKey = bytes.Clone(opts.HMACKey)
	if err := opts.PurgeLog.defaults(); err != nil {
		return nil, err
	}
	ro, err := redis.ParseURL(opts.Address)
	if err != nil {
		return nil, addressError(opts.Address, err)
	}
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout, ro.PoolTimeout = opts.Timeout, opts.Timeout, opts.Timeout, opts.Timeout
	ro.ContextTimeoutEnabled = true
	// A retry would double the time a request waits for a store that is failing.
	ro.MaxRetries, ro.DialerRetries = -1, 1
	redis.SetLogger(debugLog{})
	s := &Store{opts: opts, breaker: &circuit.Breaker{OpenFor: time.Second}}
	s.purgeBus.init(ro) // before the page calls' client runs: it writes to ro as it connects
	s.rdb = redis.NewClient(ro)
	return s, nil
}

// debugLog sends go-redis's own messages (a dial that failed, for one) to slog at debug
// level: failing calls already show in the edge's metrics and are handled by the circuit.
type debugLog struct{}

func (debugLog) Printf(ctx context.Context, format string, v ...any) {
	slog.DebugContext(ctx, "shared cache: "+redactURLs(fmt.Sprintf(format, v...)))
}

// Close closes the store's connections, and ends the retries of purges and Subscribe.
func (s *Store) Close() error {
	s.closed.Store(true)
	return errors.Join(s.rdb.Close(), s.closePurges())
}

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

// Get returns the stored document for key, or nil when the store has none. A value that is
// not a valid document for key (decode, check) is an error wrapping ErrInvalid: a miss, which
// the caller counts; the first of them is logged. A document stored before a purge this
// replica knows of matched it (however well signed: written back, or rendered before the
// purge) is a miss too, and is deleted.
func (s *Store) Get(ctx context.Context, key string) (*htmlcache.Entry, error) {
	storeKey := s.opts.Prefix + "doc:" + key
	b, err := s.value(ctx, storeKey)
	if b == nil || err != nil {
		return nil, err
	}
	e, err := decode(b, storeKey, key, s.opts.HMACKey)
	if err != nil {
		return nil, s.Reject(key, err)
	}
	if s.heard.superseded(e) {
		s.counts.superseded.Add(1)
		// A copy another replica wrote meanwhile may go too: it costs a render.
		s.do(ctx, func(ctx context.Context) error {
			_, _, _, err := s.purgeBatch(ctx, s.rdb, "", key)
			return err
		})
		return nil, nil
	}
	return e, nil
}

// Pending reports whether a purge the store has not confirmed yet matches e, a copy the
// store returned: it must not be used (render instead; the render's copy replaces it).
func (s *Store) Pending(e *htmlcache.Entry) bool { return s.heard.pending(e) }

// Reject makes err, why a document Get returned is not to be used (a check only its caller
// can make), an error wrapping ErrInvalid, and logs it if it is the first invalid document.
func (s *Store) Reject(key string, err error) error {
	if !errors.Is(err, ErrInvalid) {
		err = fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	err = fmt.Errorf("sharedcache: document %q: %w", key, err)
	s.logInvalid(&s.loggedDoc, "document", key, err)
	return err
}

// logInvalid logs the first invalid value of a kind: a store that holds one likely holds
// many, and each of them is counted by the caller.
func (s *Store) logInvalid(logged *atomic.Bool, kind, key string, err error) {
	if logged.CompareAndSwap(false, true) {
		s.opts.Log.Warn("shared cache: invalid value in the store, served as a miss (logged once per kind of key; the others are only counted)",
			"kind", kind, "key", key, "err", err)
	}
}

// Set stores e until it can no longer be used even stale. Hit-for-miss markers stay in each
// replica's own cache: they are not stored.
func (s *Store) Set(ctx context.Context, e *htmlcache.Entry) error {
	if e.Pass {
		return nil
	}
	usable := e.TTL + max(e.StaleWhileRevalidate, e.StaleIfError) - time.Since(e.Stored)
	if usable <= 0 {
		return nil
	}
	// What Get would refuse is not written: it would only take the store's memory.
	if err := check(e, e.Key); err != nil {
		return fmt.Errorf("sharedcache: %s: not stored: %w", e.Key, err)
	}
	storeKey := s.opts.Prefix + "doc:" + e.Key
	b := encode(nil, storeKey, e, s.opts.HMACKey)
	// The store's timeout is for a round trip; a large page takes longer to send (8 MiB: 28
	// ms on a unix socket), and a slow write of one is no sign of a slow store.
	return s.within(ctx, s.opts.Timeout+transferTime(len(b)), func(ctx context.Context) error {
		_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, storeKey, b, usable)
			// The path's and the tags' indexes let a purge by path, prefix or tag find
			// every document it names (purge.go).
			s.addIndexes(ctx, p, e, usable)
			return nil
		})
		return err
	})
}

// transferTime is what sending n bytes to the store may take beyond a round trip: 64 KiB a
// millisecond, a quarter of what a unix socket was measured to take.
func transferTime(n int) time.Duration { return time.Duration(n>>16) * time.Millisecond }
