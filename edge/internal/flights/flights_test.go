package flights

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
)

// A request whose cache lookup missed just before a flight for its key landed must not
// render again: under load (TestCoalescing's 500 followers on 2 cores) that window is wide
// enough to hit. A fresh copy of another bundle (the renderer reloaded one) is no such flight:
// it renders, rather than serve a page of other code as a collapsed miss.
func TestJoinAfterTheFlightLanded(t *testing.T) {
	const key, path = "b1 GET / /", "/"
	now := time.Now()
	// The code that renders now: server build s1, renderer bundle bundle-b.
	current := func(e *htmlcache.Entry) bool { return e.ServerBuild == "s1" && e.Bundle == "bundle-b" }
	for _, tc := range []struct {
		name   string
		stored *htmlcache.Entry
		starts bool
	}{
		{"nothing stored", nil, true},
		{"a fresh copy", &htmlcache.Entry{Key: key, Path: path, Status: 200, Stored: now, TTL: time.Minute, ServerBuild: "s1", Bundle: "bundle-b"}, false},
		{"a fresh copy of the bundle before a reload", &htmlcache.Entry{Key: key, Path: path, Status: 200, Stored: now, TTL: time.Minute, ServerBuild: "s1", Bundle: "bundle-a"}, true},
		{"a fresh copy of another server build", &htmlcache.Entry{Key: key, Path: path, Status: 200, Stored: now, TTL: time.Minute, ServerBuild: "s0", Bundle: "bundle-b"}, true},
		{"a stale copy", &htmlcache.Entry{Key: key, Path: path, Status: 200, Stored: now.Add(-2 * time.Minute), TTL: time.Minute, StaleWhileRevalidate: time.Hour}, true},
		{"a hit-for-miss marker", &htmlcache.Entry{Key: key, Path: path, Pass: true, Stored: now, TTL: time.Minute}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := htmlcache.New(htmlcache.Options{})
			if tc.stored != nil && !cache.Set(tc.stored, cache.Generation()) {
				t.Fatal("not stored")
			}
			f := NewTable[struct{}](cache, current)
			rendered := make(chan struct{}, 1)
			fl, started := f.Join(key, path, trace.SpanContext{}, false, func() func(*Flight[struct{}]) {
				return func(*Flight[struct{}]) { rendered <- struct{}{} }
			})
			<-fl.Done
			if started != tc.starts {
				t.Fatalf("started = %v, want %v", started, tc.starts)
			}
			if !tc.starts {
				if fl.Entry != tc.stored {
					t.Fatalf("the flight carries %v, want the stored copy", fl.Entry)
				}
				select {
				case <-rendered:
					t.Fatal("rendered again")
				default:
				}
			}
		})
	}
}

// TestJoinCoalesces: requests for one key share one flight until it lands; a purge that
// covers the key since the flight began starts a new one, which the purged render's result
// cannot be mistaken for.
func TestJoinCoalesces(t *testing.T) {
	cache := htmlcache.New(htmlcache.Options{})
	f := NewTable[struct{}](cache, func(*htmlcache.Entry) bool { return true })
	release := make(chan struct{})
	runs := 0
	prepare := func() func(*Flight[struct{}]) {
		runs++
		return func(*Flight[struct{}]) { <-release }
	}
	first, started := f.Join("k", "/p", trace.SpanContext{}, false, prepare)
	second, joined := f.Join("k", "/p", trace.SpanContext{}, false, prepare)
	if !started || joined || first != second || runs != 1 {
		t.Fatalf("started %v, second started %v, same flight %v, %d runs: want one flight", started, joined, first == second, runs)
	}
	cache.PurgePath("/p")
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
			f := NewTable[struct{}](htmlcache.New(htmlcache.Options{}), func(*htmlcache.Entry) bool { return true })
			gate, released := make(chan struct{}), make(chan struct{}, 2)
			fl := f.Alone(false, func(fl *Flight[struct{}]) {
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
		f := NewTable[struct{}](htmlcache.New(htmlcache.Options{}), func(*htmlcache.Entry) bool { return true })
		fl, _ := f.Join("k", "/", trace.SpanContext{}, false, func() func(*Flight[struct{}]) {
			return func(*Flight[struct{}]) {}
		})
		if fl.Alone() {
			t.Error("a joinable flight says it is Alone")
		}
		<-fl.Done
		fl.Leave() // a no-op
	})
}
