// Package htmlcache stores rendered documents: an LRU bounded by bytes, with per-entry
// freshness, stale-while-revalidate and stale-if-error windows (RFC 5861).
package htmlcache

import (
	"container/list"
	"net/http"
	"sync"
	"time"
)

// Entry is one stored response. It is immutable once stored.
type Entry struct {
	Key string
	// Path is the normalized path and query the entry was rendered for; purges match on it.
	Path   string
	Status int
	Header http.Header
	// Bodies holds the document per content coding: "" (identity), "gzip", "br".
	Bodies map[string][]byte
	ETag   string
	// Pass marks hit-for-miss: the last render of this key was not storable, so requests
	// for it render on their own instead of queueing behind one another.
	Pass bool

	Stored time.Time
	// TTL is how long the entry is fresh; SWR and SIE extend its use past that (RFC 5861).
	TTL, StaleWhileRevalidate, StaleIfError time.Duration

	size int // set by Cache.Set
}

// Size is what the entry counts against the cache's byte bound.
func (e *Entry) Size() int {
	n := len(e.Key) + len(e.Path) + 256 // the struct, map and list overhead, roughly
	for coding, b := range e.Bodies {
		n += len(coding) + len(b)
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
	// MaxBytes bounds the sum of entry sizes. If zero, defaults to 256 MiB.
	MaxBytes int
	// MaxEntryBytes refuses larger entries. If zero, defaults to MaxBytes / 16.
	MaxEntryBytes int
	// Now is the clock. If nil, defaults to time.Now.
	Now func() time.Time
	// OnEvict, if set, is called (with the cache's lock held) for each entry evicted to make
	// room or found expired; not for purges or replacements.
	OnEvict func(*Entry)
}

// Cache is safe for concurrent use.
type Cache struct {
	opts Options

	mu    sync.Mutex
	lru   *list.List               // guarded by mu; front = most recently used, values *Entry
	items map[string]*list.Element // guarded by mu
	bytes int                      // guarded by mu
}

// New returns an empty cache.
func New(opts Options) *Cache {
	if opts.MaxBytes == 0 {
		opts.MaxBytes = 256 << 20
	}
	if opts.MaxEntryBytes == 0 {
		opts.MaxEntryBytes = opts.MaxBytes / 16
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Cache{opts: opts, lru: list.New(), items: map[string]*list.Element{}}
}

// Now is the cache's clock.
func (c *Cache) Now() time.Time { return c.opts.Now() }

// Get returns the entry for key and what it may be used for now. An entry past all its
// windows is dropped and reported Missing.
func (c *Cache) Get(key string) (*Entry, State) {
	now := c.opts.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, Missing
	}
	e := el.Value.(*Entry)
	state := e.StateAt(now)
	if state == Missing {
		c.removeLocked(el)
		if c.opts.OnEvict != nil {
			c.opts.OnEvict(e)
		}
		return nil, Missing
	}
	c.lru.MoveToFront(el)
	return e, state
}

// Set stores e under e.Key, replacing what was there, and evicts least recently used
// entries until the cache fits its bound. It reports false when e is too large to store.
func (c *Cache) Set(e *Entry) bool {
	e.size = e.Size()
	if e.size > c.opts.MaxEntryBytes {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[e.Key]; ok {
		c.removeLocked(el)
	}
	c.items[e.Key] = c.lru.PushFront(e)
	c.bytes += e.size
	for c.bytes > c.opts.MaxBytes {
		oldest := c.lru.Back()
		c.removeLocked(oldest)
		if c.opts.OnEvict != nil {
			c.opts.OnEvict(oldest.Value.(*Entry))
		}
	}
	return true
}

// Purge removes the entry stored under key and reports whether there was one.
func (c *Cache) Purge(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if ok {
		c.removeLocked(el)
	}
	return ok
}

// PurgeIf removes every entry match accepts and returns how many.
func (c *Cache) PurgeIf(match func(*Entry) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, el := range c.items {
		if match(el.Value.(*Entry)) {
			c.removeLocked(el)
			n++
		}
	}
	return n
}

// Stats reports the number of entries and the bytes they use.
func (c *Cache) Stats() (entries, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items), c.bytes
}

func (c *Cache) removeLocked(el *list.Element) {
	e := c.lru.Remove(el).(*Entry)
	delete(c.items, e.Key)
	c.bytes -= e.size
}
