package server

// Deferred values: a Go loader's slow data (Result.Deferred), computed while its page renders.
// A page that streams starts rendering with them pending, and each is sent into the running
// render as its function returns (RenderStream's `settled`), so the shell does not wait for
// any of them. A page that does not stream renders once all have settled. Every value settles
// before the render's hard timeout, less a margin in which React finishes the boundaries
// that waited on a late one: a render is never left waiting for a value nobody will send.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// DeferredFunc computes one deferred value, as JSON, on the render's context.
type DeferredFunc func(ctx context.Context) ([]byte, error)

// deferredName is what a name may hold: it is a key of the page's `deferred` prop and an
// attribute value in the document.
var deferredName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// checkDeferred reports the first name a page cannot be given.
func checkDeferred(funcs map[string]DeferredFunc) error {
	for name, f := range funcs {
		if err := CheckValueName(name); err != nil {
			return fmt.Errorf("deferred value %q: %w", name, err)
		}
		if f == nil {
			return fmt.Errorf("deferred value %q has no function", name)
		}
	}
	return nil
}

// CheckValueName reports why name cannot name a value of the page's `deferred` prop, or nil.
func CheckValueName(name string) error {
	if !deferredName.MatchString(name) {
		return errors.New("a name is 1 to 64 letters, digits, '_' or '-'")
	}
	return nil
}

// exposeDeferred makes route's edge_deferred_total series before its first deferred value:
// zero is a count worth seeing. m is nil in tests that need no metrics.
func (m *Metrics) exposeDeferred(route string) {
	if m == nil {
		return
	}
	for _, outcome := range []string{"ok", "error", "late", "cancelled"} {
		m.deferred.WithLabelValues(route, outcome)
	}
}

// deferredMargin is how long before the hard timeout every deferred value has settled.
func deferredMargin(hard time.Duration) time.Duration { return min(hard/10, 100*time.Millisecond) }

// deferredRun is one render's deferred values: each function called once, its outcome read
// by the render call and by every document written for the render.
type deferredRun struct {
	names []string // sorted: the documents list them in one order
	// settled gets each outcome once, in the order they came; buffered for all of them.
	settled chan *ssrv1.Deferred
	// done is closed once every value has settled.
	done chan struct{}

	mu       sync.Mutex
	outcomes map[string]*ssrv1.Deferred // guarded by mu

	// stop ends the functions still running once a render no longer needs them; stopped
	// says that it was called (they settle as cancelled, not late).
	stop    func()
	stopped atomic.Bool
}

// end is called once the render is done with the values: one that completed read what it
// needed, and the rest are cancelled; after a failed one they run on to their deadline, for
// the fallback to carry them (carryDeferred).
func (r *deferredRun) end(err error) {
	if r != nil && err == nil {
		r.stopped.Store(true)
		r.stop()
	}
}

// startDeferred calls every function of l on its own goroutine, with ctx's values and its
// deadline shortened by the margin, not its end; nil when l has none. A value not settled by
// then settles as late, whether or not its function heeds ctx; one not settled when the
// render is done with them (end) as cancelled.
func (p *page) startDeferred(ctx context.Context, req *ssrv1.RenderRequest, l *Result) *deferredRun {
	if len(l.Deferred) == 0 {
		return nil
	}
	run := &deferredRun{
		settled:  make(chan *ssrv1.Deferred, len(l.Deferred)),
		done:     make(chan struct{}),
		outcomes: make(map[string]*ssrv1.Deferred, len(l.Deferred)),
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(p.timeouts.Hard)
	}
	// Every name before any goroutine starts: settle counts them.
	run.names = slices.Sorted(maps.Keys(l.Deferred))
	dctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline.Add(-deferredMargin(p.timeouts.Hard)))
	run.stop = cancel
	var wg sync.WaitGroup
	for name, f := range l.Deferred {
		wg.Go(func() {
			value, err := callDeferred(dctx, f)
			if err == nil && len(value) == 0 {
				value = []byte("null")
			}
			switch {
			case err == nil:
				run.settle(&ssrv1.Deferred{Name: name, Outcome: &ssrv1.Deferred_ValueJson{ValueJson: value}}, p.metrics, p.route, "ok")
			case dctx.Err() != nil:
				// Late: the watch below settles it, and says so once.
			default:
				if run.settle(failed(name, "failed"), p.metrics, p.route, "error") {
					p.log.Warn("deferred value failed: its Suspense boundary shows the page's error UI",
						"page", req.Page, "url", req.Url, "deferred", name, "err", err)
				}
			}
		})
	}
	go func() {
		<-dctx.Done()
		if run.stopped.Load() {
			// The render ended first, its page reading none of the rest: nothing waits for
			// them, and nothing was late.
			for _, name := range run.names {
				run.settle(failed(name, "was not needed: the render ended without it"), p.metrics, p.route, "cancelled")
			}
			return
		}
		for _, name := range run.names {
			if run.settle(failed(name, "was not ready in time"), p.metrics, p.route, "late") {
				p.log.Warn("deferred value late: its Suspense boundary shows the page's error UI",
					"page", req.Page, "url", req.Url, "deferred", name, "deadline", deadline.Add(-deferredMargin(p.timeouts.Hard)))
			}
		}
	}()
	go func() {
		wg.Wait()
		cancel()
	}()
	return run
}

// callDeferred calls f, a panic being its error.
func callDeferred(ctx context.Context, f DeferredFunc) (value []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			value, err = nil, fmt.Errorf("panic: %v", v)
		}
	}()
	return f(ctx)
}

// failed is the outcome of a value that has none. The browser gets the message: it names no
// cause, which only the edge's log holds.
func failed(name, what string) *ssrv1.Deferred {
	return &ssrv1.Deferred{Name: name, Outcome: &ssrv1.Deferred_Error{Error: fmt.Sprintf("deferred value %q %s", name, what)}}
}

// settle records d unless its value has settled already, and reports whether it did.
func (r *deferredRun) settle(d *ssrv1.Deferred, m *Metrics, route, outcome string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.outcomes[d.Name]; ok {
		return false
	}
	r.outcomes[d.Name] = d
	r.settled <- d
	m.deferred.WithLabelValues(route, outcome).Inc()
	if len(r.outcomes) == len(r.names) {
		close(r.done)
	}
	return true
}

// pending is the request's list with every value pending, for a render that streams.
func (r *deferredRun) pending() []*ssrv1.Deferred {
	list := make([]*ssrv1.Deferred, len(r.names))
	for i, name := range r.names {
		list[i] = &ssrv1.Deferred{Name: name}
	}
	return list
}

// all is the request's list once done is closed, for a render that does not stream.
func (r *deferredRun) all() []*ssrv1.Deferred {
	r.mu.Lock()
	defer r.mu.Unlock()
	list := make([]*ssrv1.Deferred, len(r.names))
	for i, name := range r.names {
		list[i] = r.outcomes[name]
	}
	return list
}

// pendingAny reports whether a value has yet to settle.
func (r *deferredRun) pendingAny() bool {
	if r == nil {
		return false
	}
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// forDocument is what the browser gets of every value so far; one still pending (a response
// closed before the render ended, a fallback) is an error for its boundary to show.
func (r *deferredRun) forDocument() []document.Deferred {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	list := make([]document.Deferred, len(r.names))
	for i, name := range r.names {
		d := r.outcomes[name]
		if d == nil {
			d = failed(name, "was not ready when the page was sent")
		}
		list[i] = document.Deferred{Name: name, JSON: d.GetValueJson(), Error: d.GetError()}
	}
	return list
}

// sendDeferred sends each outcome into the render as it settles, then closes the caller's
// side of the call; it returns when ctx ends first.
func sendDeferred(ctx context.Context, run *deferredRun, stream RenderStream) {
	if run != nil {
		for range run.names {
			select {
			case d := <-run.settled:
				if stream.Send(&ssrv1.RenderStreamRequest{Settled: d}) != nil {
					return // the call has failed: Recv says how
				}
			case <-ctx.Done():
				return
			}
		}
	}
	stream.CloseSend()
}

// deferredOf is fl's deferred values; nil for a page without any, or before its loader is
// done.
func deferredOf(fl *flight) *deferredRun {
	if fl == nil {
		return nil
	}
	if l := fl.Result.Load(); l != nil {
		return l.deferred
	}
	return nil
}
