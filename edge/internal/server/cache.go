package server

import (
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/clock"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
)

// NewCache returns an HTML cache of at most maxBytes (maxEntryBytes a document), on
// package clock's time, reporting evictions, entries and bytes to m.
func NewCache(maxBytes, maxEntryBytes int, m *Metrics) *htmlcache.Cache {
	c := htmlcache.New(htmlcache.Options{
		MaxBytes: maxBytes, MaxEntryBytes: maxEntryBytes, Now: clock.Now,
		OnEvict: func(*htmlcache.Entry) { m.evictions.Inc() },
	})
	m.watch(c)
	return c
}
