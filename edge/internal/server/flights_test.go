package server

import (
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
)

// TestFlightCacheLanded: what a request whose lookup just missed may take as the flight
// that landed: a fresh copy of the code that renders now, never a copy of another bundle
// (the renderer reloaded one) or server build, a stale copy, or a hit-for-miss marker,
// which it renders instead of serving as a collapsed miss.
func TestFlightCacheLanded(t *testing.T) {
	const key, path = "b1 GET / /", "/"
	now := time.Now()
	// The code that renders now: server build s1, renderer bundle bundle-b.
	current := func(e *htmlcache.Entry) bool { return e.ServerBuild == "s1" && e.Bundle == "bundle-b" }
	for _, tc := range []struct {
		name   string
		stored *htmlcache.Entry
		landed bool
	}{
		{"nothing stored", nil, false},
		{"a fresh copy", &htmlcache.Entry{Key: key, Path: path, Status: 200, Stored: now, TTL: time.Minute, ServerBuild: "s1", Bundle: "bundle-b"}, true},
		{"a fresh copy of the bundle before a reload", &htmlcache.Entry{Key: key, Path: path, Status: 200, Stored: now, TTL: time.Minute, ServerBuild: "s1", Bundle: "bundle-a"}, false},
		{"a fresh copy of another server build", &htmlcache.Entry{Key: key, Path: path, Status: 200, Stored: now, TTL: time.Minute, ServerBuild: "s0", Bundle: "bundle-b"}, false},
		{"a stale copy", &htmlcache.Entry{Key: key, Path: path, Status: 200, Stored: now.Add(-2 * time.Minute), TTL: time.Minute, StaleWhileRevalidate: time.Hour, ServerBuild: "s1", Bundle: "bundle-b"}, false},
		{"a hit-for-miss marker", &htmlcache.Entry{Key: key, Path: path, Pass: true, Stored: now, TTL: time.Minute, ServerBuild: "s1", Bundle: "bundle-b"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := htmlcache.New(htmlcache.Options{})
			if tc.stored != nil && !cache.Set(tc.stored, cache.Generation()) {
				t.Fatal("not stored")
			}
			e, landed := flightCache{cache, current}.Landed(key)
			if landed != tc.landed || landed && e != tc.stored {
				t.Errorf("got %v (%v), want landed %v", landed, e, tc.landed)
			}
		})
	}
	cache := htmlcache.New(htmlcache.Options{})
	c := flightCache{cache, current}
	gen := c.Generation()
	cache.PurgePath("/other")
	if c.Purged(gen, key, path) {
		t.Errorf("a purge of another path covers %s", path)
	}
	cache.PurgePath(path)
	if !c.Purged(gen, key, path) {
		t.Errorf("a purge of %s since the flight began does not cover it", path)
	}
}
