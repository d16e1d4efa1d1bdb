// Package flights coalesces renders: one flight per cache key, which every request for that
// key joins while it runs, on a goroutine and context of its own. It knows neither what a
// render returns nor how the cache stores it: the server names both (R and E) and says what
// the table needs of its cache (Cache).
package flights

import (
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// A Cache is what a Table needs of the cache its flights fill, whose entries are E.
type Cache[E any] interface {
	// Generation marks the cache's purges so far.
	Generation() uint64
	// Purged reports whether a purge since gen covers the entry of key and path.
	Purged(gen uint64, key, path string) bool
	// Landed is the entry a flight for key left behind, fresh and servable as if the
	// request had joined that flight: not one rendered by other code, nor a hit-for-miss
	// marker.
	Landed(key string) (E, bool)
}

// A Flight is one render coalesced for every request for its key that arrives while it runs.
// D is what its Go loader returned, R the render's response, E the cache's entry.
type Flight[D, R, E any] struct {
	Done chan struct{} // closed when the fields below are set
	// Gen is the cache's purge generation when the render began: a purge since then that
	// matches it keeps its result out of the cache and new requests out of the flight.
	Gen  uint64
	Resp R
	// Entry is the stored document, the zero E when the result was not storable.
	Entry E
	// Private: the response may set a cookie or is marked private or no-store; it belongs
	// to the request that started the flight, never to those that joined it.
	Private bool
	Err     error
	// Call is how long the renderer call took, as the edge saw it (Server-Timing).
	Call time.Duration
	// FromShared: Entry came from the shared cache, with no render here (Resp is zero).
	FromShared bool
	// Origin is the span of the request that started the flight, which the render's spans
	// belong to: the requests that join it link their wait to it. Invalid with tracing off.
	Origin trace.SpanContext
	// Result is what the page's Go loader returned, once it has: a request whose render
	// fails or is late still gets its status, redirect, not-found page and props. Nil while
	// loading and for pages without a loader.
	Result atomic.Pointer[D]
	// Tee holds a streaming render's output as it comes; nil for pages that do not stream.
	Tee *Tee[R]
	// Postponed is a prerender's postponed state, Resp's HTML its prelude; nil for any other
	// render, and for a prerender that left no hole (its prelude is the whole page).
	Postponed []byte

	// A flight only the request that started it waits for (Table.Alone) may hold its Resp in
	// borrowed memory (Lend): given back once both that request and the flight's work are
	// done with it (Leave). holders counts which of the two still are.
	alone   bool
	holders atomic.Int32
	release func() // set by the flight's work before it lets go
}

// Alone reports whether only the request that started fl waits for it (Table.Alone): its Resp
// may then borrow memory (Lend).
func (fl *Flight[D, R, E]) Alone() bool { return fl.alone }

// Lend gives fl the release of memory its Resp borrows, to be called once the request that
// waits for fl has left it and the flight's work is done. Only the flight's work calls it,
// and only on a flight that is Alone.
func (fl *Flight[D, R, E]) Lend(release func()) {
	if !fl.alone {
		panic("flights: Lend on a flight others may join")
	}
	fl.release = release
}

// Leave says that the request that waited for fl no longer reads its Resp; a no-op for a
// flight others may join.
func (fl *Flight[D, R, E]) Leave() {
	if fl.alone {
		fl.let()
	}
}

// let is one holder letting go; the last one releases what Resp borrows.
func (fl *Flight[D, R, E]) let() {
	if fl.holders.Add(-1) == 0 && fl.release != nil {
		fl.release()
	}
}

// landed is the Done channel of a flight that had landed before the request came.
var landed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// A Table coalesces renders per cache key, like singleflight, except that the work runs on
// its own goroutine and context: no waiter's deadline or disconnect can fail the others, and
// a render that outlives every waiter still completes and fills the cache.
type Table[D, R, E any] struct {
	cache Cache[E]

	mu sync.Mutex
	m  map[string]*Flight[D, R, E] // guarded by mu
}

// NewTable coalesces the renders that fill cache.
func NewTable[D, R, E any](cache Cache[E]) *Table[D, R, E] {
	return &Table[D, R, E]{cache: cache}
}

// Join returns the flight for key, starting the work that prepare returns in the background
// when there is none, or when the one running began before a purge that covers it. prepare
// runs only then, before join returns (so it may still read the request). started reports
// whether this call started the flight; origin is the span of the request that asks.
//
// A flight that landed between the caller's cache lookup and this call left a fresh copy
// behind: the caller gets that, as a flight already done, instead of rendering again. A fresh
// copy rendered by other code (the renderer reloaded another bundle since) is not one.
func (f *Table[D, R, E]) Join(key, path string, origin trace.SpanContext, streamed bool, prepare func() func(*Flight[D, R, E])) (fl *Flight[D, R, E], started bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, ok := f.m[key]; ok && !f.cache.Purged(fl.Gen, key, path) {
		return fl, false
	}
	if e, ok := f.cache.Landed(key); ok {
		return &Flight[D, R, E]{Done: landed, Entry: e}, false
	}
	if f.m == nil {
		f.m = map[string]*Flight[D, R, E]{}
	}
	// The flight leaves the map before it is done, so a request arriving after that finds the
	// stored entry instead; the delete waits for this lock, so it follows the insert.
	run := prepare()
	fl = f.start(streamed, false, func(fl *Flight[D, R, E]) {
		run(fl)
		f.mu.Lock()
		if f.m[key] == fl { // not if a purge replaced it
			delete(f.m, key)
		}
		f.mu.Unlock()
	})
	// Only requests that join read it, and they get fl under this lock.
	fl.Origin = origin
	f.m[key] = fl
	return fl, true
}

// Alone runs a flight no one else can join (bypass, hit-for-miss and private renders).
// streamed: the flight's render streams, into a Tee. The request that starts it calls
// Leave once it is done with it.
func (f *Table[D, R, E]) Alone(streamed bool, run func(*Flight[D, R, E])) *Flight[D, R, E] {
	return f.start(streamed, true, run)
}

// start runs a new flight's work on a goroutine of its own.
func (f *Table[D, R, E]) start(streamed, alone bool, run func(*Flight[D, R, E])) *Flight[D, R, E] {
	fl := &Flight[D, R, E]{Done: make(chan struct{}), Gen: f.cache.Generation(), alone: alone}
	if streamed {
		fl.Tee = NewTee[R]()
	}
	if alone {
		fl.holders.Store(2) // the flight's work, and the request
	}
	go func() {
		if fl.alone {
			defer fl.let()
		}
		defer close(fl.Done)
		run(fl)
	}()
	return fl
}
