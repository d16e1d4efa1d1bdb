package server

// A page's islands that the cache lacks, rendered: one renderer call for a page's islands,
// shared with the pages that miss the same island (its name, props and code) at the same
// moment, and what is stored of them.

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// islandCounts say where a page's islands came from: rendered counts those another page's
// call rendered for it too. clientBuild is the client build a rendered one's bundle was
// built with, for the page to link (empty: the current one).
type islandCounts struct {
	rendered, cached, browser int
	clientBuild               string
}

// islandResult is an island's HTML from a call, or why it has none (a fallback's reason);
// clientBuild is the client build its bundle was built with.
type islandResult struct {
	html                  []byte
	bundleID, clientBuild string
	reason                string
}

// renderIslands returns each marked island's HTML, nil for those left to the browser: from
// the cache; else from the call of another page rendering the same island at that moment;
// else from one renderer call for the rest. The page waits for them no longer than the
// render timeout.
func (s *Site) renderIslands(r *http.Request, marked []markedIsland) ([][]byte, islandCounts) {
	htmls := make([][]byte, len(marked))
	var counts islandCounts
	keys := make([]string, len(marked))
	ttls := make([]time.Duration, len(marked))
	gen, build := s.d.cache.Generation(), s.d.shell.BuildID()
	var led, joined []int
	flights := make([]*islandFlight, len(marked))
	for i, m := range marked {
		ttl, declared := s.islandTTL(m.name)
		if !declared {
			s.d.names.use(islandPage(m.name), "a template")
		}
		ttls[i], keys[i] = ttl, islandKey(build, m.name, m.props)
		if ttl > 0 {
			if e, state := s.d.cache.Get(keys[i]); state == htmlcache.Fresh && s.d.build.matches(e) {
				htmls[i] = e.Bodies[""]
				counts.cached++
				s.d.metrics.island(m.name, "hit")
				continue
			}
		}
		var leads bool
		if flights[i], leads = s.islandFlights.join(keys[i]); leads {
			led = append(led, i)
		} else {
			joined = append(joined, i)
		}
	}
	if len(led)+len(joined) == 0 {
		return htmls, counts
	}
	ctx, cancel := context.WithTimeout(flightContext(r.Context()), s.o.Timeouts.Render)
	defer cancel()
	outcome := func(i int, res islandResult, how string) {
		if htmls[i] = res.html; res.html == nil {
			counts.browser++
			s.d.metrics.island(marked[i].name, res.reason)
			return
		}
		counts.rendered++
		counts.clientBuild = cmp.Or(counts.clientBuild, res.clientBuild)
		s.d.metrics.island(marked[i].name, how)
	}
	results := s.callIslands(ctx, r, marked, led)
	for j, i := range led {
		res := results[j]
		s.islandFlights.finish(keys[i], flights[i], res)
		outcome(i, res, "rendered")
		if res.html != nil && ttls[i] > 0 && s.d.cache.Fits(len(res.html)) {
			e := &htmlcache.Entry{
				Key: keys[i], Path: islandPage(marked[i].name), Status: http.StatusOK,
				Stored: s.d.cache.Now(), TTL: ttls[i], Bodies: map[string][]byte{"": res.html},
			}
			s.d.build.stamp(e, res.bundleID)
			s.d.cache.Set(e, gen)
		}
	}
	for _, i := range joined {
		select {
		case <-flights[i].done:
			outcome(i, flights[i].result, "coalesced")
		case <-ctx.Done():
			outcome(i, islandResult{reason: ReasonTimeout}, "")
		}
	}
	return htmls, counts
}

// callIslands renders the islands of marked at indexes in one renderer call, within ctx:
// a result for each.
func (s *Site) callIslands(ctx context.Context, r *http.Request, marked []markedIsland, indexes []int) []islandResult {
	results := make([]islandResult, len(indexes))
	if len(indexes) == 0 {
		return results
	}
	failAll := func(reason string) []islandResult {
		for j := range results {
			results[j] = islandResult{reason: reason}
		}
		return results
	}
	ir, ok := s.d.renderer.(IslandRenderer)
	sl := &slot{slots: s.d.slots}
	if !ok || !sl.take() {
		return failAll(ReasonOverloaded)
	}
	defer sl.release()
	req := &ssrv1.RenderIslandsRequest{Url: r.URL.RequestURI(), Islands: make([]*ssrv1.Island, len(indexes))}
	for j, i := range indexes {
		req.Islands[j] = &ssrv1.Island{Name: marked[i].name, PropsJson: marked[i].props}
	}
	// As a page's render call: the request's id and trace context to the renderer, a span,
	// the in-flight gauge.
	s.d.metrics.rendersInFlight.Inc()
	ctx, span := s.d.callSpan(ctx, islandsSpan, islandsPage(req.Islands))
	resp, err := ir.RenderIslands(s.d.outgoing(ctx), req)
	s.d.metrics.rendersInFlight.Dec()
	endRender(span, err)
	if err == nil && len(resp.GetIslands()) != len(indexes) {
		err = fmt.Errorf("renderer: %d islands answered for %d asked", len(resp.GetIslands()), len(indexes))
	}
	if err != nil {
		reason := reasonFor(err)
		if reason == ReasonDeadline { // the call's deadline is the render timeout
			reason = ReasonTimeout
		}
		s.d.log.Warn("islands left to the browser", "url", req.Url, "islands", len(indexes), "reason", reason, "err", err)
		return failAll(reason)
	}
	for j, res := range resp.GetIslands() {
		rendered := res.GetRendered()
		if rendered == nil {
			e := res.GetError()
			reason := islandReason(e.GetCode())
			s.d.log.Warn("island left to the browser", "url", req.Url, "island", marked[indexes[j]].name, "reason", reason,
				"code", e.GetCode().String(), "err", e.GetMessage())
			results[j] = islandResult{reason: reason}
			continue
		}
		s.d.build.rendered(rendered.GetBundleId())
		results[j] = islandResult{html: rendered.GetHtml(), bundleID: rendered.GetBundleId(), clientBuild: s.d.clientBuild(rendered.GetClientBuildId())}
	}
	return results
}

// islandFlights are the islands being rendered, by key (islandKey): a page that misses one
// of them waits for that call's result instead of rendering it again.
type islandFlights struct {
	mu sync.Mutex
	m  map[string]*islandFlight // guarded by mu
}

// islandFlight is one island's render, shared by the pages that missed it meanwhile.
type islandFlight struct {
	done    chan struct{} // closed once result is set
	result  islandResult
	waiting int // pages that joined it, guarded by islandFlights.mu
}

// join returns key's flight, and whether the caller leads it: it must then finish it.
func (f *islandFlights) join(key string) (*islandFlight, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, ok := f.m[key]; ok {
		fl.waiting++
		return fl, false
	}
	if f.m == nil {
		f.m = map[string]*islandFlight{}
	}
	fl := &islandFlight{done: make(chan struct{})}
	f.m[key] = fl
	return fl, true
}

// finish gives fl's result to the pages that joined it; pages that miss key from now on
// start a flight of their own (or find the cache filled).
func (f *islandFlights) finish(key string, fl *islandFlight, res islandResult) {
	f.mu.Lock()
	delete(f.m, key)
	f.mu.Unlock()
	fl.result = res
	close(fl.done)
}

// islandsPage names a call's islands in its span: the one island's page, or "islands".
func islandsPage(islands []*ssrv1.Island) string {
	if len(islands) == 1 {
		return islandPage(islands[0].GetName())
	}
	return "islands"
}

// islandKey is the cache key of an island's HTML: the client build (as pages'), its name
// and a hash of its props.
func islandKey(build, name string, props []byte) string {
	sum := sha256.Sum256(props)
	return "island\x00" + build + "\x00" + name + "\x00" + hex.EncodeToString(sum[:])
}

// islandReason names an island's own failure with the words a page's fallback uses.
func islandReason(code ssrv1.RenderErr) string {
	switch code {
	case ssrv1.RenderErr_RENDER_ERR_DEADLINE:
		return ReasonTimeout
	case ssrv1.RenderErr_RENDER_ERR_QUEUE_FULL, ssrv1.RenderErr_RENDER_ERR_WOULD_MISS_DEADLINE:
		return ReasonOverloaded
	case ssrv1.RenderErr_RENDER_ERR_DRAINING, ssrv1.RenderErr_RENDER_ERR_CANCELLED:
		return ReasonUnavailable
	case ssrv1.RenderErr_RENDER_ERR_QUARANTINED:
		return ReasonQuarantined
	case ssrv1.RenderErr_RENDER_ERR_PAGE_TOO_LARGE:
		return ReasonTooLarge
	case ssrv1.RenderErr_RENDER_ERR_WORKER_LOST:
		return ReasonWorkerLost
	case ssrv1.RenderErr_RENDER_ERR_PAGE_NOT_FOUND:
		return ReasonUnknownPage
	case ssrv1.RenderErr_RENDER_ERR_INVALID_PROPS:
		return ReasonBadRequest
	default:
		return ReasonRenderError
	}
}
