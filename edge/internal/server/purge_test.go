package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/admin"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache"
)

// TestManyPurgesDuringARender: a hundred purges of other pages while a render runs neither
// keep new requests from joining it nor its result from being stored; a purge of its own
// page among a hundred others keeps it out of the cache.
func TestManyPurgesDuringARender(t *testing.T) {
	s := start(t, cached)
	release := map[int64]chan struct{}{1: make(chan struct{}), 2: make(chan struct{})}
	calls := counting(s, func(n int64) (*ssrv1.RenderResponse, error) {
		if c, ok := release[n]; ok {
			<-c
		}
		return body(fmt.Sprintf("version-%d", n))(n)
	})
	first := make(chan string)
	go func() { _, b := get(t, s.url+"/"); first <- b }()
	poll.Until(t, "the first render to start", func() bool { return calls.Load() == 1 })
	for i := range 100 {
		s.cache.PurgePath(fmt.Sprint("/products/", i))
	}
	joined := make(chan string)
	go func() { _, b := get(t, s.url+"/"); joined <- b }()
	poll.Until(t, "a request after 100 purges of other pages to join the render", func() bool {
		return testutilCount(s, "edge_cache_collapsed_total") == 1
	})
	close(release[1])
	if a, b := <-first, <-joined; !strings.Contains(a, "version-1") || !strings.Contains(b, "version-1") {
		t.Errorf("the render's requests got %.20q and %.20q, want version-1", a, b)
	}
	if resp, b := get(t, s.url+"/"); !strings.HasPrefix(resp.Header.Get("Cache-Status"), "sidecar-ssr; hit") || !strings.Contains(b, "version-1") {
		t.Errorf("after 100 purges of other pages during its render, / is not stored: Cache-Status %q", resp.Header.Get("Cache-Status"))
	}

	// Its own page purged among a hundred others: the render that began before is not stored.
	s.cache.PurgePath("/")
	third := make(chan string)
	go func() { _, b := get(t, s.url+"/"); third <- b }()
	poll.Until(t, "the second render to start", func() bool { return calls.Load() == 2 })
	for i := range 100 {
		s.cache.PurgePath(fmt.Sprint("/products/", i))
		if i == 50 {
			s.cache.PurgePath("/")
		}
	}
	close(release[2])
	<-third
	poll.Until(t, "the render to finish", func() bool { return testutilCount(s, "edge_renders_in_flight") == 0 })
	if resp, b := get(t, s.url+"/"); strings.Contains(b, "version-2") {
		t.Errorf("a render of / that began before / was purged was stored: Cache-Status %q", resp.Header.Get("Cache-Status"))
	}
}

// localPurger is a Purger over one replica's cache, with no shared store.
type localPurger struct{ c *htmlcache.Cache }

func (l localPurger) Purge(ctx context.Context, by, value string) (int, error) {
	if by == "key" {
		if l.c.PurgeKey(value) {
			return 1, nil
		}
		return 0, nil
	}
	return purgeLocal(l.c, sharedcache.Purge{Kind: by, Value: value}), nil
}

// storeDown purges locally, then fails as a purge whose store part failed.
type storeDown struct{ localPurger }

var errStoreDown = errors.New(`sharedcache: purge not applied to the store: "i/o timeout"`)

func (d storeDown) Purge(ctx context.Context, by, value string) (int, error) {
	n, _ := d.localPurger.Purge(ctx, by, value)
	return n, errStoreDown
}

// TestPurgeSaysTheStoreFailed: when the shared store's part of a purge fails, the admin
// endpoint answers 502, with what it purged here and why the store was not.
func TestPurgeSaysTheStoreFailed(t *testing.T) {
	s := start(t, cached)
	counting(s, body("x"))
	get(t, s.url+"/")
	adminHandler := admin.Handler(admin.Options{Draining: new(atomic.Bool), Gatherer: s.registry, Token: "t", Cache: storeDown{localPurger{s.cache}}})
	for _, query := range []string{"path=/", "key=" + url.QueryEscape(homeKey), "prefix=/", "tag=t"} {
		req := httptest.NewRequest("POST", "/cache/purge?"+query, nil)
		req.Header.Set("Authorization", "Bearer t")
		rec := httptest.NewRecorder()
		adminHandler.ServeHTTP(rec, req)
		var got struct {
			Purged int
			Store  *bool
			Error  string
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusBadGateway || got.Store == nil || *got.Store || got.Error != errStoreDown.Error() {
			t.Errorf("%s with the store down: got %d %s (%v), want 502 saying the store was not purged, and why", query, rec.Code, rec.Body, err)
		}
		if want := map[string]int{"path=/": 1}[query]; got.Purged != want {
			t.Errorf("%s: purged %d here, want %d", query, got.Purged, want)
		}
	}
}
