package server

// The render flight: what a request that cannot be answered from the cache sets going. A
// render slot, the page's Go loader, the call to the renderer (loadAndRender,
// callRenderer); one flight per cache key that every request for it joins (flightFor,
// fillCache), or one of its own (renderForOne); and what is stored of the result (entryFor).

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/flights"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/middleware"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
	"go.opentelemetry.io/otel/trace"
)

// flight is one render coalesced for every request for its key, with what its Go loader
// decided, the renderer's response and the entry it stored.
type flight = flights.Flight[Result, *ssrv1.RenderResponse, *htmlcache.Entry]

// flightTable coalesces the site's flights.
type flightTable = flights.Table[Result, *ssrv1.RenderResponse, *htmlcache.Entry]

// flightCache is the HTML cache as the flights table needs it; current says whether an
// entry was rendered by the code that renders now, for a copy of another bundle is no
// flight that landed.
type flightCache struct {
	cache   *htmlcache.Cache
	current func(*htmlcache.Entry) bool
}

func newFlights(c flightCache) *flightTable {
	return flights.NewTable[Result, *ssrv1.RenderResponse, *htmlcache.Entry](c)
}

func (c flightCache) Generation() uint64 { return uint64(c.cache.Generation()) }

func (c flightCache) Purged(gen uint64, key, path string) bool {
	return c.cache.Purged(htmlcache.Generation(gen), &htmlcache.Entry{Key: key, Path: path})
}

func (c flightCache) Landed(key string) (*htmlcache.Entry, bool) {
	e, state := c.cache.Get(key)
	return e, state == htmlcache.Fresh && !e.Pass && c.current(e)
}

// callRenderer calls the renderer (ctx carries the hard timeout) and notes the call's duration
// in the flight. It runs holding s, which a streamed render gives back at its shell.
func (p *page) callRenderer(ctx context.Context, fl *flight, req *ssrv1.RenderRequest, s *slot) (*ssrv1.RenderResponse, error) {
	if req.Page == "" {
		return nil, errNoNotFoundPage // the not-found page, which the bundle has not named
	}
	p.metrics.rendersInFlight.Inc()
	defer p.metrics.rendersInFlight.Dec()
	ctx, span := p.callSpan(ctx, renderSpan, req.Page)
	began := time.Now()
	var resp *ssrv1.RenderResponse
	var err error
	borrowing, canBorrow := p.renderer.(BorrowingRenderer)
	switch {
	case p.isPrerender(fl):
		resp, err = p.prerender(p.outgoing(ctx), p.renderer.(StreamRenderer), fl, req)
	case p.streams(fl):
		resp, err = p.renderStream(p.outgoing(ctx), p.renderer.(StreamRenderer), fl, req, s)
	case canBorrow && fl.Alone():
		var release func()
		if resp, release, err = borrowing.RenderBorrowed(p.outgoing(ctx), req); err == nil {
			fl.Lend(release)
		}
	default:
		resp, err = p.renderer.Render(p.outgoing(ctx), req)
	}
	fl.Call = time.Since(began)
	p.metrics.observeRender(p.route, began, err)
	endRender(span, err)
	if err == nil {
		resp.PropsJson = renderedProps(req, resp)
		p.build.rendered(resp.GetBundleId())
	}
	return resp, err
}

// streams reports whether fl's render streams: its page does and the renderer can.
func (p *page) streams(fl *flight) bool {
	_, ok := p.renderer.(StreamRenderer)
	return ok && fl.Tee != nil
}

// renderedProps are the props the page rendered with: the renderer sends them back only
// when the page's load() made them (renderer/src/worker/render-page.js); else they are the
// ones this request sent, which cross the hop once. Both sides run the cases of
// proto/testdata/props-crossing.json.
func renderedProps(req *ssrv1.RenderRequest, resp *ssrv1.RenderResponse) []byte {
	if len(resp.PropsJson) > 0 {
		return resp.PropsJson
	}
	return req.PropsJson
}

// flightContext is the context of a render that may be coalesced or stored: the request's id
// and trace span, none of the other values the caller's middleware put in ctx (the cache
// key does not hold them), and no end with the request.
func flightContext(ctx context.Context) context.Context {
	fctx := trace.ContextWithSpan(context.Background(), trace.SpanFromContext(ctx))
	if id := middleware.RequestID(ctx); id != "" {
		fctx = middleware.WithID(fctx, id)
	}
	return fctx
}

// flightFor joins the flight for key, or starts one that fills the cache (fillCache); the
// request that starts it is the origin the others' waits link to. The loader's request is
// made only for a flight that starts: joining one costs nothing.
func (p *page) flightFor(key string, r *http.Request, req *ssrv1.RenderRequest) (*flight, bool) {
	prepare := func() func(*flight) {
		lr := p.loaderRequest(r, req)
		// The request's id and span, not its end: the render outlives the render timeout to
		// fill the cache.
		ctx := flightContext(r.Context())
		return func(fl *flight) { p.fillCache(ctx, fl, key, lr, req) }
	}
	return p.flights.Join(key, req.Url, p.origin(r.Context()), p.stream && !p.prerendered(), prepare)
}

// fillCache is a coalesced flight's work: the shared cache's copy if it has one (or gets one from
// another replica's render within the render timeout), else a load and render, stored in
// both levels, or a hit-for-miss marker when it may not be stored (the cache keeps a usable
// copy over a marker).
func (p *page) fillCache(ctx context.Context, fl *flight, key string, lr *http.Request, req *ssrv1.RenderRequest) {
	unlock := func() {}
	if p.shared != nil {
		var e *htmlcache.Entry
		// A copy purged since this flight began is not kept: render instead.
		// A copy rendered by other code (an older deploy's) is not kept either.
		if e, unlock = p.shared.fetch(key, p.timeouts.Hard, p.cache.Now); e != nil && p.build.matches(e) && p.cache.Set(e, htmlcache.Generation(fl.Gen)) {
			fl.Entry, fl.FromShared = e, true
			return
		}
	}
	fl.Resp, fl.Err = p.loadAndRender(ctx, fl, lr, req, nil)
	if fl.Err != nil {
		unlock()
		return
	}
	fl.Private = private(fl.Resp)
	e := p.entryFor(key, req, fl)
	if e == nil {
		e = &htmlcache.Entry{Key: key, Path: req.Url, Pass: true, Stored: p.cache.Now(), TTL: p.passTTL}
	}
	stored := p.cache.Set(e, htmlcache.Generation(fl.Gen))
	if stored && !e.Pass {
		fl.Entry = e
	}
	if p.shared != nil {
		p.shared.put(fl.Entry, unlock)
	}
}

// renderForOne renders for one request, within the hard timeout or until ctx is done. With
// a key, a result that may be stored is stored (it replaces a hit-for-miss marker at once).
// A partially prerendered page is rendered whole, with values, the request's own
// (requestValues), as deferred values.
func (p *page) renderForOne(ctx context.Context, key string, lr *http.Request, req *ssrv1.RenderRequest, values map[string]DeferredFunc) *flight {
	return p.flights.Alone(p.stream, func(fl *flight) {
		fl.Resp, fl.Err = p.loadAndRender(ctx, fl, lr, req, values)
		// A whole render of a prerendered page holds the request's own values: never stored.
		if fl.Err != nil || key == "" || values != nil {
			return
		}
		if e := p.entryFor(key, req, fl); e != nil {
			p.cache.Set(e, htmlcache.Generation(fl.Gen))
		}
	})
}

// entryFor builds the cache entry for fl's rendered response, the document in every coding, or
// returns nil when the response may not be stored or its document would not fit the cache.
func (p *page) entryFor(key string, req *ssrv1.RenderRequest, fl *flight) *htmlcache.Entry {
	resp := fl.Resp
	status := p.status(resp)
	if !storable(status, resp) {
		return nil
	}
	e := &htmlcache.Entry{
		Key: key, Path: req.Url, Tags: resp.GetCache().GetTags(), Status: status, Stored: p.cache.Now(),
		TTL: p.policy.TTL, StaleWhileRevalidate: p.policy.StaleWhileRevalidate, StaleIfError: p.policy.StaleIfError,
	}
	p.build.stamp(e, resp.GetBundleId())
	if status == http.StatusNotFound {
		e.TTL = min(e.TTL, p.notFoundTTL)
	}
	if hint := time.Duration(resp.GetCache().GetMaxAgeSeconds()) * time.Second; hint > 0 {
		e.TTL = min(e.TTL, hint)
	}
	e.TTL -= time.Duration(float64(e.TTL) * p.jitter * rand.Float64())
	e.Header = pageHeaders(resp)
	if status >= 300 && status < 400 {
		return e
	}
	if fl.Postponed != nil {
		if !p.preludeEntry(e, req, fl) {
			return nil
		}
		return e
	}
	bp := buffers.Get().(*[]byte)
	var doc []byte
	if p.nonce != nil {
		doc, e.NonceAt = p.shell.AppendTemplate((*bp)[:0], p.documentPage(req, resp, fl))
	} else {
		doc = p.shell.Append((*bp)[:0], p.documentPage(req, resp, fl))
	}
	defer putBuffer(bp, doc)
	// Checked before compressing: a document that cannot be stored is not worth encoding.
	if !p.cache.Fits(len(doc)) {
		p.log.Warn("page too large to cache: requests for it render side by side (hit-for-miss)",
			"for", p.passTTL, "page", req.Page, "url", req.Url, "bytes", len(doc), "limit", "a 16th of the cache (edge.cache_max_mb, ssr.Options.CacheMaxBytes)")
		return nil
	}
	if e.NonceAt != nil {
		// Each response gets its own nonce, so it is compressed as it is sent.
		e.Bodies = map[string][]byte{"": bytes.Clone(doc)}
	} else {
		e.Bodies = encodeAll(doc)
	}
	e.ETag = etag(e.Bodies[""])
	return e
}

// storable: complete pages, the app's 404 and permanent redirects; never errors, temporary
// redirects, or private responses.
func storable(status int, resp *ssrv1.RenderResponse) bool {
	switch status {
	case http.StatusOK, http.StatusNotFound, http.StatusMovedPermanently, http.StatusPermanentRedirect:
		return !private(resp)
	}
	return false
}

// private: what the page marked private or no-store, or a response that sets a cookie.
// Such a response belongs to the one client it was rendered for.
func private(resp *ssrv1.RenderResponse) bool {
	if resp.GetCache().GetNoStore() {
		return true
	}
	for _, h := range resp.GetHeaders() {
		name := http.CanonicalHeaderKey(h.GetName())
		if name == "Set-Cookie" {
			return true
		}
		if name == "Cache-Control" {
			v := strings.ToLower(h.GetValue())
			if strings.Contains(v, "private") || strings.Contains(v, "no-store") {
				return true
			}
		}
	}
	return false
}

// slot is a render's hold on one of edge.render_slots (deps.slots). What takes CPU,
// here or in the renderer, holds it: the Go loader, and the render call (up to its shell,
// for a page that streams). A wait for data, which takes none, does not: a streamed render
// gives its slot back at the shell, past which it mostly waits for its boundaries' data,
// and a page that does not stream gives it back while its deferred values come in. Only the
// flight's goroutine uses a slot.
type slot struct {
	slots chan struct{}
	held  bool
}

// take takes a free slot, without waiting for one; it reports whether it did.
func (s *slot) take() bool {
	select {
	case s.slots <- struct{}{}:
		s.held = true
	default:
	}
	return s.held
}

// release gives the slot back, if held.
func (s *slot) release() {
	if s.held {
		s.held = false
		<-s.slots
	}
}

// loadAndRender runs the page's loader (if any) on lr, made by loaderRequest, and the render,
// within the hard timeout: the render timeout of the requests waiting for it covers both.
// values are a request's own values (requestValues) for a whole render of a prerendered page,
// or nil: for such a page, its prerender.
func (p *page) loadAndRender(ctx context.Context, fl *flight, lr *http.Request, req *ssrv1.RenderRequest, values map[string]DeferredFunc) (*ssrv1.RenderResponse, error) {
	// A render slot before the loader, not only before the render call: past the cap a
	// request sheds at once, and never after the shop's data work for a render it will not
	// get. It does not wait for a slot.
	s := &slot{slots: p.slots}
	if !s.take() {
		return nil, errShed
	}
	defer s.release()
	ctx, cancel := context.WithTimeout(ctx, p.timeouts.Hard)
	defer cancel()
	loaded := &Result{} // a prerendered page's values, with no loader
	switch {
	case p.loader != nil:
		loadCtx, span := p.span(ctx, "loader")
		var err error
		loaded, err = p.load(lr.WithContext(loadCtx), req)
		span.End()
		if err != nil {
			return nil, asLoadError(err)
		}
		if p.prerendered() && len(loaded.Deferred) > 0 {
			return nil, asLoadError(fmt.Errorf("page %q: the loader returned deferred values, which a partially prerendered page does not store: its values per request come from PerRequest", req.Page))
		}
	case !p.prerendered():
		return p.callRenderer(ctx, fl, req, s)
	}
	if p.prerendered() {
		loaded.Deferred = values
	}
	d := loaded.decided
	waits := false // for deferred values, before a render that does not stream
	if d.redirect == "" && !d.notFound {
		if waits = len(loaded.Deferred) > 0 && !p.streams(fl); waits {
			// Given back before the functions start, so that the slot is free while they
			// run: other renders have it meanwhile.
			s.release()
		}
		loaded.deferred = p.startDeferred(ctx, req, loaded)
	}
	// Made before the render: a render that fails or is late still answers with the
	// loader's status, redirect, not-found page and props, and the deferred values so far.
	fl.Result.Store(loaded)
	if d.redirect != "" {
		return &ssrv1.RenderResponse{Page: req.Page, Status: int32(d.status), Headers: append(headerList(loaded.Header),
			&ssrv1.Header{Name: "Location", Value: d.redirect}), Cache: cacheHint(loaded)}, nil
	}
	withProps := &ssrv1.RenderRequest{Page: req.Page, Url: req.Url, Params: req.Params, Variants: req.Variants, PropsJson: loaded.Props}
	if p.loader == nil {
		withProps.PropsJson = req.PropsJson
	}
	if d.notFound {
		withProps.Page = p.names.notFoundPage()
	}
	if p.isPrerender(fl) && !d.notFound {
		withProps.Deferred = p.holes()
	}
	if run := loaded.deferred; run != nil {
		if waits {
			select {
			case <-run.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			// Not waiting for one, as before the loader: with none free the request falls
			// back (overloaded) with the loader's props and every value, for the browser.
			if !s.take() {
				return nil, errShed
			}
			withProps.Deferred = run.all()
		} else {
			withProps.Deferred = run.pending() // settled as the render runs: renderStream
		}
	}
	resp, err := p.callRenderer(ctx, fl, withProps, s)
	loaded.deferred.end(err)
	if err != nil {
		return nil, err
	}
	applyResult(resp, loaded)
	return resp, nil
}

// applyResult gives resp the Go loader's status, headers and cache hint.
func applyResult(resp *ssrv1.RenderResponse, loaded *Result) {
	if d := loaded.decided; d.status != 0 {
		resp.Status = int32(d.status)
	}
	resp.Headers = append(resp.Headers, headerList(loaded.Header)...)
	if hint := cacheHint(loaded); hint != nil {
		resp.Cache = hint
	}
}
