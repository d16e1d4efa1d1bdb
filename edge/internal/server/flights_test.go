package server

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
)

// A request whose cache lookup missed just before a flight for its key landed must not
// callRenderer again: under load (TestCoalescing's 500 followers on 2 cores) that window is wide
// enough to hit. A fresh copy of another bundle (the renderer reloaded one) is no such flight:
// it renders, rather than serve a page of other code as a collapsed miss.
func TestJoinAfterTheFlightLanded(t *testing.T) {
	const key, path = "b1 GET / /", "/"
	now := time.Now()
	build := &builds{server: "s1"}
	build.bundle.Store(new("bundle-b"))
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
			f := &flights{cache: cache, current: build.matches}
			rendered := make(chan struct{}, 1)
			fl, started := f.join(key, path, trace.SpanContext{}, false, func() func(*flight) {
				return func(*flight) { rendered <- struct{}{} }
			})
			<-fl.done
			if started != tc.starts {
				t.Fatalf("started = %v, want %v", started, tc.starts)
			}
			if !tc.starts {
				if fl.entry != tc.stored {
					t.Fatalf("the flight carries %v, want the stored copy", fl.entry)
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
