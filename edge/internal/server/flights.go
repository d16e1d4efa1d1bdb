package server

import (
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// flight is one render shared by every request for its key that arrives while it runs.
type flight struct {
	done chan struct{} // closed when the fields below are set
	// gen is the cache's purge generation when the render began: a purge since then that
	// matches it keeps its result out of the cache and new requests out of the flight.
	gen  htmlcache.Generation
	resp *ssrv1.RenderResponse
	// entry is the stored document, nil when the result was not storable.
	entry *htmlcache.Entry
	// private: the response may set a cookie or is marked private or no-store; it belongs
	// to the request that started the flight, never to those that joined it.
	private bool
	err     error
	// call is how long the renderer call took, as the edge saw it (Server-Timing).
	call time.Duration
	// fromShared: entry came from the shared cache, with no render here (resp is nil).
	fromShared bool
	// origin is the span of the request that started the flight, which the render's spans
	// belong to: the requests that join it link their wait to it. Invalid with tracing off.
	origin trace.SpanContext
	// loaded is what a Go loader decided, once it has: a request whose render fails or is
	// late still gets its status, redirect, not-found page and props (see page.decision).
	// Nil while loading and for pages without a loader.
	loaded atomic.Pointer[Loaded]
	// tee holds a streaming render's output as it comes (stream.go); nil for pages that do
	// not stream.
	tee *tee
}

// landed is the done channel of a flight that had landed before the request came.
var landed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// flights coalesces renders per cache key, like singleflight, except that the work runs on
// its own goroutine and context: no waiter's deadline or disconnect can fail the others, and
// a render that outlives every waiter still completes and fills the cache.
type flights struct {
	cache *htmlcache.Cache
	// current reports whether an entry was rendered by the code that renders now (builds):
	// a copy of another bundle is no flight that landed.
	current func(*htmlcache.Entry) bool

	mu sync.Mutex
	m  map[string]*flight // guarded by mu
}

// flightFor returns the flight for key, starting the work that prepare returns in the background
// when there is none, or when the one running began before a purge that covers it. prepare
// runs only then, before join returns (so it may still read the request). started reports
// whether this call started the flight; origin is the span of the request that asks.
//
// A flight that landed between the caller's cache lookup and this call left a fresh copy
// behind: the caller gets that, as a flight already done, instead of rendering again. A fresh
// copy rendered by other code (the renderer reloaded another bundle since) is not one.
func (f *flights) join(key, path string, origin trace.SpanContext, streamed bool, prepare func() func(*flight)) (fl *flight, started bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, ok := f.m[key]; ok && !f.cache.Purged(fl.gen, &htmlcache.Entry{Key: key, Path: path}) {
		return fl, false
	}
	if e, state := f.cache.Get(key); state == htmlcache.Fresh && !e.Pass && f.current(e) {
		return &flight{done: landed, entry: e}, false
	}
	if f.m == nil {
		f.m = map[string]*flight{}
	}
	// The flight leaves the map before it is done, so a request arriving after that finds the
	// stored entry instead; the delete waits for this lock, so it follows the insert.
	run := prepare()
	fl = f.alone(streamed, func(fl *flight) {
		run(fl)
		f.mu.Lock()
		if f.m[key] == fl { // not if a purge replaced it
			delete(f.m, key)
		}
		f.mu.Unlock()
	})
	// Only requests that join read it, and they get fl under this lock.
	fl.origin = origin
	f.m[key] = fl
	return fl, true
}

// alone runs a flight no one else can join (bypass, hit-for-miss and private renders).
// streamed: the flight's render streams, into a tee.
func (f *flights) alone(streamed bool, run func(*flight)) *flight {
	fl := &flight{done: make(chan struct{}), gen: f.cache.Generation()}
	if streamed {
		fl.tee = newTee()
	}
	go func() {
		defer close(fl.done)
		run(fl)
	}()
	return fl
}
