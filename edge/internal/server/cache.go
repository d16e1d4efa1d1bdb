package server

import (
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/clock"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
)

// NewCache returns the HTML cache sized by e, on package clock's time, reporting evictions,
// entries and bytes to m.
func NewCache(e config.Edge, m *Metrics) *htmlcache.Cache {
	c := htmlcache.New(htmlcache.Options{
		MaxBytes: e.CacheMaxMB << 20, MaxEntryBytes: e.CacheMaxEntryMB << 20, Now: clock.Now,
		OnEvict: func(*htmlcache.Entry) { m.evictions.Inc() },
	})
	m.watch(c)
	return c
}
