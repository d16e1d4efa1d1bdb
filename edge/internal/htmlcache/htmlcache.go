// Package htmlcache stores rendered documents, bounded by bytes, with per-entry freshness,
// stale-while-revalidate and stale-if-error windows (RFC 5861).
//
// What stays when the cache is full is decided by W-TinyLFU (otter's cache): a newcomer
// displaces a stored document only if its key has been asked for more often lately, so a
// flood of keys seen once (?page=zz1, zz2...) passes through a small window and leaves the
// pages that are requested again in place. Negative results (statuses other than 2xx and
// 3xx, and hit-for-miss markers) have a byte budget of their own within the bound, so a
// flood of distinct 404s cannot displace documents either.
package htmlcache

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"
)

// Entry is one stored response. It is immutable once stored.
type Entry struct {
	Key string
	// Path is the normalized path and query the entry was rendered for; purges match on it.
	Path string
	// Tags are the page's surrogate keys (load()'s cache.tags); PurgeTag matches on them.
	Tags   []string
	Status int
	Header http.Header
	// Bodies holds the document per content coding: "" (identity), "gzip", "br".
	Bodies map[string][]byte
	ETag   string
	// ServerBuild and Bundle identify the code that rendered it: the Go server's build and
	// the renderer's server bundle (empty: not known when it was stored).
	ServerBuild, Bundle string
	// NonceAt are the offsets in the identity body where each script's nonce goes
	// (document.WithNonce): set when every response gets a nonce of its own, and then the
	// body is kept in identity only.
	NonceAt []int
	// Pass marks hit-for-miss: the last render of this key was not storable, so requests
	// for it render on their own instead of queueing behind one another. A marker never
	// replaces a usable stored document (Set).
	Pass bool
	// Resume is set for a partially prerendered page: Bodies holds its document up to the end
	// of the prelude, in identity only, and each response resumes the holes after it.
	Resume *Resume

	Stored time.Time
	// TTL is how long the entry is fresh; SWR and SIE extend its use past that (RFC 5861).
	TTL, StaleWhileRevalidate, StaleIfError time.Duration

	size int // set by Cache.Set
}

// Resume is what a stored prelude needs to be resumed for one request: the page it was
// rendered as, the props it rendered with (the document's hydration data) and React's
// postponed state. None of it is a request's own: the holes are.
type Resume struct {
	Page             string
	Props, Postponed []byte
}

// negative: a result other than a document (a status outside 2xx and 3xx, or a hit-for-miss
// marker), stored within Options.NegativeMaxBytes.
func (e *Entry) negative() bool { return e.Pass || e.Status < 200 || e.Status >= 400 }

// Size is what the entry counts against the cache's byte bound: the memory its bodies hold
// (their capacity, not their length), its strings, and a rough allowance for the rest.
func (e *Entry) Size() int {
	n := len(e.Key) + len(e.Path) + 256 // the struct, map and list overhead, roughly
	for coding, b := range e.Bodies {
		n += len(coding) + cap(b)
	}
	for _, tag := range e.Tags {
		n += len(tag) + 16
	}
	if r := e.Resume; r != nil {
		n += len(r.Page) + cap(r.Props) + cap(r.Postponed)
	}
	for k, vs := range e.Header {
		n += len(k)
		for _, v := range vs {
			n += len(v)
		}
	}
	return n
}

// State is what an entry may be used for at a given moment.
type State int

const (
	// Missing: nothing stored, or nothing usable.
	Missing State = iota
	// Fresh: serve it.
	Fresh
	// Stale: serve it at once and refresh it in the background (stale-while-revalidate).
	Stale
	// StaleIfError: render; serve it only if the render fails or is late (stale-if-error).
	StaleIfError
)

func (s State) String() string {
	return [...]string{"missing", "fresh", "stale", "stale-if-error"}[s]
}

// StateAt says what e may be used for at now.
func (e *Entry) StateAt(now time.Time) State {
	age := now.Sub(e.Stored)
	switch {
	case age < e.TTL:
		return Fresh
	case age < e.TTL+e.StaleWhileRevalidate:
		return Stale
	case age < e.TTL+e.StaleIfError:
		return StaleIfError
	default:
		return Missing
	}
}

// TTLAt is the remaining freshness at now, negative once stale (RFC 9211's ttl).
func (e *Entry) TTLAt(now time.Time) time.Duration { return e.TTL - now.Sub(e.Stored) }

// Options configure a Cache. Zero values mean the defaults given.
type Options struct {
	// MaxBytes bounds the sum of entry sizes, negative results included. If zero, defaults to
	// 256 MiB.
	MaxBytes int
	// NegativeMaxBytes is the share of MaxBytes that negative results may use: entries whose
	// Status is not 2xx or 3xx, and hit-for-miss markers. Documents use the rest, so that
	// negative results never displace them. If zero or less, defaults to MaxBytes / 16; at
	// most MaxBytes / 2.
	NegativeMaxBytes int
	// MaxEntryBytes refuses larger entries. If zero, defaults to MaxBytes / 16.
	MaxEntryBytes int
	// Now is the clock. If nil, defaults to time.Now.
	Now func() time.Time
	// OnEvict, if set, is called for each entry evicted to make room (a newcomer that the
	// admission policy turned away included) or found expired; not for purges or
	// replacements. It runs inside the cache's calls, and must not call the cache.
	OnEvict func(*Entry)
	// PurgeMemory is how long a purge is remembered, on the real clock (not Now): a render
	// that began before a purge and ends within this time is not stored if the purge matches
	// it; one that ends later is not stored at all. Set it above the longest a render may run
	// (RememberPurgesFor raises it). If zero, defaults to 1 minute.
	PurgeMemory time.Duration
}

// Generation counts purges. A render notes the generation when it begins, and its result
// is not stored if a purge since then matched it: a purge covers renders already running.
type Generation uint64

// purgeKind is what a purge names.
type purgeKind int

const (
	byKey purgeKind = iota
	byPath
	byPrefix
	byTag
	byFunc // PurgeIf's: any entry its func accepts
)

// purge is one purge the cache remembers.
type purge struct {
	gen   Generation
	at    time.Time // on the real clock
	kind  purgeKind
	value string            // the key, path, prefix or tag
	match func(*Entry) bool // byFunc only
}

// Cache is safe for concurrent use.
type Cache struct {
	opts Options

	// clock is the real clock purges are remembered by; a test's may be another.
	clock func() time.Time

	// docs holds documents (2xx and 3xx), negatives the other entries, each within its
	// budget of bytes (MaxBytes less NegativeMaxBytes, and NegativeMaxBytes). A key is in
	// one of them at most.
	docs, negatives store
	// entries and bytes are what both hold: Set adds an entry, the stores' deletion
	// callback takes it away, whatever removed it.
	entries, bytes atomic.Int64

	// mu serializes the writes (Set, purges); Get holds it shared, so that it never looks
	// between a key's removal from one store and its addition to the other.
	mu  sync.RWMutex
	gen Generation // guarded by mu: purges so far
	// purges are the purges of the last PurgeMemory, oldest first. latest indexes those by
	// key, path, prefix and tag: each value's latest generation, so that matching a render
	// costs the same whatever the number of purges; funcs are PurgeIf's, matched one by one.
	purges    []purge                       // guarded by mu
	latest    [byFunc]map[string]Generation // guarded by mu
	funcs     []purge                       // guarded by mu
	forgotten Generation                    // guarded by mu: the latest purge no longer remembered
	memory    time.Duration                 // guarded by mu: PurgeMemory, raised by RememberPurgesFor
}

// store is one budget's entries, by key.
type store struct {
	*otter.Cache[string, *Entry]
	maxBytes int
}

// typicalEntryBytes sizes a store's table and frequency sketch up front, so that the sketch
// counts requests from the first one on rather than from when the store is half full (it
// grows if the store holds more entries). The sketch halves its counts every ten times as
// many requests as it was sized for: sized for too many entries, it remembers keys no longer
// asked for (the pages of the client build before the current one) for longer. A page of the
// demo app takes 190 KB with its encodings; 128 KiB kept the hit ratio at least LRU's on
// traces that change client builds (admission_test.go).
const typicalEntryBytes = 128 << 10

// New returns an empty cache.
func New(opts Options) *Cache {
	if opts.MaxBytes == 0 {
		opts.MaxBytes = 256 << 20
	}
	if opts.NegativeMaxBytes <= 0 {
		opts.NegativeMaxBytes = opts.MaxBytes / 16
	}
	opts.NegativeMaxBytes = min(opts.NegativeMaxBytes, opts.MaxBytes/2)
	if opts.MaxEntryBytes == 0 {
		opts.MaxEntryBytes = opts.MaxBytes / 16
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PurgeMemory == 0 {
		opts.PurgeMemory = time.Minute
	}
	c := &Cache{opts: opts, clock: time.Now, memory: opts.PurgeMemory}
	c.docs = c.newStore(opts.MaxBytes - opts.NegativeMaxBytes)
	c.negatives = c.newStore(opts.NegativeMaxBytes)
	for kind := range c.latest {
		c.latest[kind] = map[string]Generation{}
	}
	return c
}

// newStore returns a store of at most maxBytes. Its upkeep (evictions) runs within the call
// that made it needed, so that the bound holds when Set returns and no goroutine is left
// behind; otter's Set is seen by the next Get at once.
func (c *Cache) newStore(maxBytes int) store {
	return store{maxBytes: max(maxBytes, 1), Cache: otter.Must(&otter.Options[string, *Entry]{
		MaximumWeight:    uint64(max(maxBytes, 1)),
		Weigher:          func(_ string, e *Entry) uint32 { return uint32(e.size) },
		InitialCapacity:  max(maxBytes/typicalEntryBytes, 16),
		OnAtomicDeletion: c.deleted,
		Executor:         func(upkeep func()) { upkeep() },
	})}
}

// deleted takes e out of the counts, whatever removed it (a replacement, a purge, an
// eviction), and reports an eviction to OnEvict. It runs under a lock of the store's table.
func (c *Cache) deleted(ev otter.DeletionEvent[string, *Entry]) {
	c.entries.Add(-1)
	c.bytes.Add(-int64(ev.Value.size))
	if ev.WasEvicted() && c.opts.OnEvict != nil {
		c.opts.OnEvict(ev.Value)
	}
}

// RememberPurgesFor makes the cache remember each purge for d at least (PurgeMemory): a
// page whose renders may run that long calls it.
func (c *Cache) RememberPurgesFor(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.memory = max(c.memory, d)
}

// Now is the cache's clock.
func (c *Cache) Now() time.Time { return c.opts.Now() }

// Get returns the entry for key and what it may be used for now. An entry past all its
// windows is dropped and reported Missing.
func (c *Cache) Get(key string) (*Entry, State) {
	now := c.opts.Now()
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := c.docs
	e, ok := s.GetIfPresent(key)
	if !ok {
		s = c.negatives
		if e, ok = s.GetIfPresent(key); !ok {
			return nil, Missing
		}
	}
	state := e.StateAt(now)
	if state == Missing {
		// Another Get may have found it too: one of them removes it, and reports it.
		removed := false
		s.ComputeIfPresent(key, func(stored *Entry) (*Entry, otter.ComputeOp) {
			if stored != e {
				return stored, otter.CancelOp
			}
			removed = true
			return nil, otter.InvalidateOp
		})
		if removed && c.opts.OnEvict != nil {
			c.opts.OnEvict(e)
		}
		return nil, Missing
	}
	return e, state
}

// Fits reports whether an entry of size bytes may be stored at all.
func (c *Cache) Fits(size int) bool { return size <= c.opts.MaxEntryBytes }

// Generation is the current purge generation; pass it to Set with the result of a render
// that begins now.
func (c *Cache) Generation() Generation {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// Set stores e under e.Key, replacing what was there, and evicts entries until the cache
// fits its bounds: a Get finds e at once, but once e has passed the admission window it
// stays only if its key is asked for more often than the entry it would displace. since is
// the generation at which e's render began. It reports false, storing nothing, when e is
// too large (for MaxEntryBytes, or for its budget), when a purge since then matched e, or
// when e is a hit-for-miss marker and a usable document is stored under its key (an
// unstorable result must not destroy the copy that stale-while-revalidate and
// stale-if-error would serve).
func (c *Cache) Set(e *Entry, since Generation) bool {
	e.size = e.Size()
	s, other := c.docs, c.negatives
	if e.negative() {
		s, other = c.negatives, c.docs
	}
	if !c.Fits(e.size) || e.size > s.maxBytes {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.purgedLocked(since, e) {
		return false
	}
	if old := c.peekLocked(e.Key); old != nil && e.Pass && !old.Pass && old.StateAt(c.opts.Now()) != Missing {
		return false
	}
	other.Invalidate(e.Key) // a key moving between documents and negative results
	c.entries.Add(1)
	c.bytes.Add(int64(e.size))
	s.Set(e.Key, e)
	return true
}

// peekLocked is the entry stored under key, if any, without counting a request for it.
func (c *Cache) peekLocked(key string) *Entry {
	for _, s := range [...]store{c.docs, c.negatives} {
		if stored, ok := s.GetEntryQuietly(key); ok {
			return stored.Value
		}
	}
	return nil
}

// Purged reports whether a purge since generation since matched e (only Key and Path need
// be set): a render that began then must not be stored, nor joined by new requests.
func (c *Cache) Purged(since Generation, e *Entry) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.purgedLocked(since, e)
}

func (c *Cache) purgedLocked(since Generation, e *Entry) bool {
	switch {
	case since >= c.gen:
		return false
	case since < c.forgotten:
		return true // began before a purge no longer remembered: it ran longer than PurgeMemory
	case c.latest[byKey][e.Key] > since, c.latest[byPath][e.Path] > since:
		return true
	}
	for _, tag := range e.Tags {
		if c.latest[byTag][tag] > since {
			return true
		}
	}
	if prefixes := c.latest[byPrefix]; len(prefixes) > len(e.Path) {
		for i := 1; i <= len(e.Path); i++ {
			if prefixes[e.Path[:i]] > since {
				return true
			}
		}
	} else {
		for prefix, gen := range prefixes {
			if gen > since && strings.HasPrefix(e.Path, prefix) {
				return true
			}
		}
	}
	for i := len(c.funcs) - 1; i >= 0 && c.funcs[i].gen > since; i-- {
		if c.funcs[i].match(e) {
			return true
		}
	}
	return false
}

// PurgeKey removes the entry stored under key, and keeps renders of it that are running
// from being stored. It reports whether there was an entry.
func (c *Cache) PurgeKey(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rememberLocked(purge{kind: byKey, value: key})
	_, inDocs := c.docs.Invalidate(key)
	_, inNegatives := c.negatives.Invalidate(key)
	return inDocs || inNegatives
}

// PurgePath is PurgeKey for every entry rendered for path (a normalized path and query),
// whatever its variants. It returns how many entries it removed.
func (c *Cache) PurgePath(path string) int {
	return c.purge(purge{kind: byPath, value: path}, func(e *Entry) bool { return e.Path == path })
}

// PurgeTag is PurgeKey for every entry tagged tag. It returns how many entries it removed.
func (c *Cache) PurgeTag(tag string) int {
	return c.purge(purge{kind: byTag, value: tag}, func(e *Entry) bool { return slices.Contains(e.Tags, tag) })
}

// PurgePrefix is PurgePath for every path that starts with prefix; an empty prefix purges
// nothing.
func (c *Cache) PurgePrefix(prefix string) int {
	if prefix == "" {
		return 0
	}
	return c.purge(purge{kind: byPrefix, value: prefix}, func(e *Entry) bool { return strings.HasPrefix(e.Path, prefix) })
}

// PurgeIf removes every entry match accepts, and keeps renders running now whose result
// match accepts from being stored. It returns how many entries it removed.
func (c *Cache) PurgeIf(match func(*Entry) bool) int {
	return c.purge(purge{kind: byFunc, match: match}, match)
}

// purge remembers p, and removes every entry match (p's) accepts.
func (c *Cache) purge(p purge, match func(*Entry) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rememberLocked(p)
	n := 0
	for _, s := range [...]store{c.docs, c.negatives} {
		var keys []string
		for key, e := range s.All() {
			if match(e) {
				keys = append(keys, key)
			}
		}
		for _, key := range keys {
			if _, ok := s.Invalidate(key); ok {
				n++
			}
		}
	}
	return n
}

// rememberLocked counts p as the latest purge, and forgets the purges older than the
// cache's memory. Memory is bounded by time only: any number of purges within it keeps
// exactly the renders they match from being stored.
func (c *Cache) rememberLocked(p purge) {
	c.gen++
	p.gen, p.at = c.gen, c.clock()
	forget := 0
	for forget < len(c.purges) && p.at.Sub(c.purges[forget].at) > c.memory {
		old := c.purges[forget]
		if old.kind != byFunc && c.latest[old.kind][old.value] == old.gen {
			delete(c.latest[old.kind], old.value)
		}
		c.forgotten = old.gen
		c.purges[forget] = purge{} // its value and func are garbage now
		forget++
	}
	c.purges = append(c.purges[forget:], p)
	for len(c.funcs) > 0 && c.funcs[0].gen <= c.forgotten {
		c.funcs[0] = purge{}
		c.funcs = c.funcs[1:]
	}
	if p.kind == byFunc {
		c.funcs = append(c.funcs, p)
	} else {
		c.latest[p.kind][p.value] = p.gen
	}
}

// Stats reports the number of entries and the bytes they use, negative results included.
func (c *Cache) Stats() (entries, bytes int) {
	return int(c.entries.Load()), int(c.bytes.Load())
}
