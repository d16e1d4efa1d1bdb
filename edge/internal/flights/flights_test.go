package flights

import (
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// fakeCache is a Cache of string entries: landed the entries a flight left, purged the
// generation at which each key was purged.
type fakeCache struct {
	gen    uint64
	purged map[string]uint64
	landed map[string]string
}

func newFakeCache() *fakeCache {
	return &fakeCache{purged: map[string]uint64{}, landed: map[string]string{}}
}

func (c *fakeCache) Generation() uint64 { return c.gen }

func (c *fakeCache) Purged(gen uint64, key, _ string) bool { return c.purged[key] > gen }

func (c *fakeCache) Landed(key string) (string, bool) {
	e, ok := c.landed[key]
	return e, ok
}

func (c *fakeCache) purge(key string) {
	c.gen++
	c.purged[key] = c.gen
}

// flight is a Flight whose loader decides nothing, whose render and entry are strings.
type flight = Flight[struct{}, string, string]

// A request whose cache lookup missed just before a flight for its key landed must not
// render again: under load (TestCoalescing's 500 followers on 2 cores) that window is wide
// enough to hit. Which entries count as landed is the cache's to say (the server's
// TestFlightCacheLanded).
func TestJoinAfterTheFlightLanded(t *testing.T) {
	for _, landed := range []bool{false, true} {
		c := newFakeCache()
		if landed {
			c.landed["k"] = "the stored copy"
		}
		f := NewTable[struct{}, string, string](c)
		rendered := make(chan struct{}, 1)
		fl, started := f.Join("k", "/", trace.SpanContext{}, false, func() func(*flight) {
			return func(*flight) { rendered <- struct{}{} }
		})
		<-fl.Done
		if started == landed {
			t.Fatalf("landed %v: started = %v", landed, started)
		}
		if landed {
			if fl.Entry != "the stored copy" {
				t.Fatalf("the flight carries %q, want the stored copy", fl.Entry)
			}
			select {
			case <-rendered:
				t.Fatal("rendered again")
			default:
			}
		}
	}
}

// TestJoinCoalesces: requests for one key share one flight until it lands; a purge that
// covers the key since the flight began starts a new one, which the purged render's result
// cannot be mistaken for.
func TestJoinCoalesces(t *testing.T) {
	cache := newFakeCache()
	f := NewTable[struct{}, string, string](cache)
	release := make(chan struct{})
	runs := 0
	prepare := func() func(*flight) {
		runs++
		return func(*flight) { <-release }
	}
	first, started := f.Join("k", "/p", trace.SpanContext{}, false, prepare)
	second, joined := f.Join("k", "/p", trace.SpanContext{}, false, prepare)
	if !started || joined || first != second || runs != 1 {
		t.Fatalf("started %v, second started %v, same flight %v, %d runs: want one flight", started, joined, first == second, runs)
	}
	cache.purge("k")
	third, restarted := f.Join("k", "/p", trace.SpanContext{}, false, prepare)
	if !restarted || third == first || runs != 2 {
		t.Errorf("after a purge: started %v, same flight %v, %d runs: want a new flight", restarted, third == first, runs)
	}
	close(release)
	<-first.Done
	<-third.Done
}

// TestAloneReleasesOnceBothLeave: what an Alone flight's response borrows is given back once,
// after both its work and the request that waits for it are done, whichever ends first (a
// request that fell back at its render timeout leaves before the work ends); a flight others
// may join never borrows.
func TestAloneReleasesOnceBothLeave(t *testing.T) {
	for _, requestFirst := range []bool{true, false} {
		name := map[bool]string{true: "the request leaves first", false: "the work ends first"}[requestFirst]
		t.Run(name, func(t *testing.T) {
			f := NewTable[struct{}, string, string](newFakeCache())
			gate, released := make(chan struct{}), make(chan struct{}, 2)
			fl := f.Alone(false, func(fl *flight) {
				fl.Lend(func() { released <- struct{}{} })
				<-gate
			})
			if !fl.Alone() {
				t.Fatal("an Alone flight says it is not")
			}
			if requestFirst {
				fl.Leave()
				close(gate)
				<-fl.Done
			} else {
				close(gate)
				<-fl.Done
				if len(released) != 0 {
					t.Fatal("released while the request still reads the response")
				}
				fl.Leave()
			}
			<-released // the work's own let may come just after Done closes
			if len(released) != 0 {
				t.Fatal("released twice")
			}
		})
	}
	t.Run("a flight others may join", func(t *testing.T) {
		f := NewTable[struct{}, string, string](newFakeCache())
		fl, _ := f.Join("k", "/", trace.SpanContext{}, false, func() func(*flight) {
			return func(*flight) {}
		})
		if fl.Alone() {
			t.Error("a joinable flight says it is Alone")
		}
		<-fl.Done
		fl.Leave() // a no-op
	})
}
