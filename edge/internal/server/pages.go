// Package server is a page's request path: the cache lookup, a miss's render flight (its
// slot, the Go loader, the renderer's call, the stored result; one per key: package
// flights), the wait within the render timeout, and the answer: the page, a stale copy or
// the client-side-render shell. The public package mounts its pages; middleware and the
// admin handler are rooms of their own.
package server

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/middleware"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/renderclient"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Renderer renders one page; *renderclient.Client is the real one.
type Renderer interface {
	Render(ctx context.Context, req *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error)
}

// A BorrowingRenderer can answer in pooled memory (renderclient.Client): the response's HTML
// and props may be read until release is called. A render that only the request that started
// it waits for uses it (flights.Flight.Lend), saving a copy of the page per request.
type BorrowingRenderer interface {
	RenderBorrowed(ctx context.Context, req *ssrv1.RenderRequest) (resp *ssrv1.RenderResponse, release func(), err error)
}

// deps are what every page handler shares.
type deps struct {
	renderer Renderer
	shell    *document.Shell
	cache    *htmlcache.Cache
	flights  *flightTable
	// slots caps the renders that take CPU at once (a Go loader, a render call up to its
	// shell), background ones included: see slot.
	slots   chan struct{}
	jitter  float64
	metrics *Metrics
	log     *slog.Logger
	// shared is the cache's second level; nil when off.
	shared *sharedTier
	// earlyHints: a 103 with the build's Link header before waiting for a render.
	earlyHints bool
	// tracer: nil when tracing is off.
	tracer trace.Tracer
	// nonce gives each response's script nonce; nil: scripts carry none.
	nonce func(*http.Request) string
	// names are the page names in use, checked against the renderer's bundle.
	names *pageNames
	// build identifies the code that renders: the Go server's and the renderer bundle's.
	build *builds
	// unknownBuilds are the client builds renders named that the document could not link,
	// each logged once (clientBuild).
	unknownBuilds *sync.Map
	// exports is the renderer's last answer to ListPages: what its bundle exports, the
	// largest request it takes (propsLimit) and what it says of every document.
	exports *atomic.Pointer[renderclient.Bundle]
}

// bundleExports is the renderer's last answer to ListPages, or nil: before it answered, or
// for a page made without a site.
func (d *deps) bundleExports() *renderclient.Bundle {
	if d.exports == nil {
		return nil
	}
	return d.exports.Load()
}

// page serves one route.
type page struct {
	route       string // the ServeMux pattern, for metrics
	name        string
	params      []string // wildcard names in the route pattern
	timeouts    Timeouts
	policy      CachePolicy // TTL zero: not cached
	keys        keyRule
	personal    []string // cookies that make a request personal
	notFoundTTL time.Duration
	passTTL     time.Duration
	// loader computes the props in Go; nil: the page's own load() does.
	loader Loader
	// perRequest are the request's own values of a partially prerendered page (prerender.go),
	// by name; nil for any other page.
	perRequest map[string]RequestFunc
	// vary names every request header a rendered response depends on.
	vary string
	// unmatched marks the catch-all: every unmatched path shares one render request and one
	// cache entry, and answers 404 whatever the page says.
	unmatched bool
	// stream: the page streams (stream.go).
	stream bool
	// noncePlaceholder, for a page that streams with nonces, is what its renders put in
	// React's inline scripts for the edge to replace with each response's nonce (document
	// Page.NoncePlaceholder). Random, so that no page content can carry it; "" otherwise.
	noncePlaceholder string
	// unflushedSaid: a streamed response's lost flush has been logged (checkFlushed); shared
	// by the copies RespondWith makes.
	unflushedSaid *atomic.Bool
	deps
}

// wildcard matches a path value in a pattern: ServeMux's {name} and {name...}, and chi's
// {name:regexp}, whose path value is named without the regexp.
var wildcard = regexp.MustCompile(`\{([^}:.$]+)(?::[^}]*)?(?:\.\.\.)?\}`)

func newPage(r Route, o *Options, d deps) *page {
	p := &page{
		route: r.Pattern, name: r.Page, timeouts: r.Timeouts, policy: r.Cache,
		keys: newKeyRule(r), personal: r.Cache.PersonalizeCookies,
		notFoundTTL: o.NotFoundTTL, passTTL: o.PassTTL, vary: varyHeader(r), deps: d,
		stream:        r.Stream,
		unflushedSaid: new(atomic.Bool),
	}
	p.params = wildcards(r.Pattern)
	d.metrics.exposeDeferred(r.Pattern)
	if r.Stream {
		d.metrics.exposeUnflushed(r.Pattern)
	}
	if p.stream && d.nonce != nil {
		p.noncePlaceholder = rand.Text()
	}
	return p
}

func wildcards(pattern string) []string {
	var names []string
	for _, m := range wildcard.FindAllStringSubmatch(pattern, -1) {
		names = append(names, m[1])
	}
	return names
}

// mountedPatterns caches the wildcard names of each pattern a page was reached through: the
// routes a router registered, a small fixed set.
var mountedPatterns sync.Map // pattern → []string

// mountedWildcards names the path values of the pattern r was routed by (net/http's
// ServeMux, chi 5.2 and later), which the page's configured route need not repeat: the
// public package's default route is the page name.
func mountedWildcards(r *http.Request) []string {
	if r.Pattern == "" {
		return nil
	}
	if names, ok := mountedPatterns.Load(r.Pattern); ok {
		return names.([]string)
	}
	names, _ := mountedPatterns.LoadOrStore(r.Pattern, wildcards(r.Pattern))
	return names.([]string)
}

// varyHeader names the request headers a route's responses depend on: the coding, the
// header variants, and Cookie when a cookie is a variant or can make a request personal (a
// shared cache in front then stores one copy per Cookie header, which in practice means
// it stores copies only for requests without cookies).
func varyHeader(r Route) string {
	names := []string{"Accept-Encoding"}
	cookie := len(r.Cache.PersonalizeCookies) > 0
	for _, v := range slices.Sorted(slices.Values(r.Variants)) {
		kind, name, _ := strings.Cut(v, ":")
		if kind == "header" {
			names = append(names, http.CanonicalHeaderKey(name))
		} else {
			cookie = true
		}
	}
	if cookie {
		names = append(names, "Cookie")
	}
	return strings.Join(names, ", ")
}

func (p *page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := p.request(r)
	if !validUTF8(req) {
		http.Error(w, "bad request: a path segment or a variant the page depends on is not valid UTF-8", http.StatusBadRequest)
		return
	}
	if reason := p.bypass(r); reason != "" {
		if reason != "uncacheable-route" {
			// Rendered for this client (its Authorization, a personalizing cookie): no shared
			// cache in front may keep it. The page's own Cache-Control, if any, replaces it.
			w.Header().Set("Cache-Control", "private")
		}
		p.metrics.cacheResult(p.route, "bypass")
		p.serveAlone(w, r, req, "", p.loaderRequest(r, req), "sidecar-ssr; fwd=bypass; detail="+reason)
		return
	}
	key := p.keys.key(p.shell.BuildID(), req.Url, req.Variants)
	if r.Pattern != "" && r.Pattern != p.route {
		// The params come from the pattern the handler is mounted at: one handler mounted
		// at two patterns can name the same path's wildcards differently.
		key += "\x00pattern=" + r.Pattern
	}
	_, lookup := p.span(r.Context(), "cache lookup")
	entry, state := p.cache.Get(key)
	if entry != nil && !entry.Pass && !p.build.matches(entry) {
		entry, state = nil, htmlcache.Missing // the renderer moved to another bundle since
	}
	if lookup.IsRecording() {
		lookup.SetAttributes(attribute.String("ssr.cache.state", state.String()), attribute.Bool("ssr.cache.pass", entry != nil && entry.Pass))
	}
	lookup.End()
	if entry != nil && entry.Pass {
		// Hit-for-miss: the last render was not storable; do not queue behind one another.
		p.metrics.cacheResult(p.route, "pass")
		p.serveAlone(w, r, req, key, p.loaderRequest(r, req), "sidecar-ssr; fwd=miss; detail=uncacheable")
		return
	}
	switch state {
	case htmlcache.Fresh:
		p.metrics.cacheResult(p.route, "hit")
		p.serveEntry(w, r, req, entry, fmt.Sprintf("sidecar-ssr; hit; ttl=%d", seconds(entry.TTLAt(p.cache.Now()))))
		return
	case htmlcache.Stale:
		p.metrics.cacheResult(p.route, "stale")
		if _, started := p.flightFor(key, r, req); started {
			p.metrics.refreshes.WithLabelValues(p.route).Inc()
		}
		p.serveEntry(w, r, req, entry, fmt.Sprintf("sidecar-ssr; hit; ttl=%d", seconds(entry.TTLAt(p.cache.Now()))))
		return
	case htmlcache.StaleIfError:
		p.metrics.cacheResult(p.route, "stale-if-error")
	default:
		p.metrics.cacheResult(p.route, "miss")
	}

	fwd := "miss"
	if entry != nil {
		fwd = "stale"
	}
	fl, started := p.flightFor(key, r, req)
	if !started {
		p.metrics.collapsed.WithLabelValues(p.route).Inc()
	}
	status := "sidecar-ssr; fwd=" + fwd
	if !started {
		status += "; collapsed"
	}
	p.await(w, r, req, key, fl, started, status, entry)
}

// await answers with the flight's result if it lands within the render timeout; otherwise,
// or when it failed, with stale (if not nil) or the client-side-render shell. own says
// whether this request started the flight: a private result goes only to that request, and
// a request that joined gets a render of its own, within what is left of its render timeout.
//
// A flight that streams is answered as it is produced once its shell is ready within the
// render timeout (streamFrom), except to crawlers, which wait up to the hard timeout for the
// complete document.
func (p *page) await(w http.ResponseWriter, r *http.Request, req *ssrv1.RenderRequest, key string, fl *flight, own bool, status string, stale *htmlcache.Entry) {
	arrived := time.Now()
	defer func() {
		if own { // fl may be another flight by then: the private render of a coalesced one
			fl.Leave()
		}
	}()
	if !own {
		// The render this request waits for is traced under the request that started it,
		// which the wait links to.
		var opts []trace.SpanStartOption
		if fl.Origin.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: fl.Origin}))
		}
		_, wait := p.span(r.Context(), "coalesced wait", opts...)
		defer wait.End()
	}
	// The browser fetches the page's scripts and styles while the render runs.
	if p.earlyHints && r.ProtoAtLeast(1, 1) {
		w.Header().Set("Link", p.shell.Preload())
		w.WriteHeader(http.StatusEarlyHints)
	}
	var failure error
	reason := ""
	wait, crawler := p.timeouts.Render, p.stream && p.isCrawler(r)
	if crawler {
		wait = p.timeouts.Hard
	}
	patience := time.NewTimer(wait)
	defer patience.Stop()
	var unstreamed *flight // a flight whose head was not for streaming
	for reason == "" {
		var ready <-chan struct{}
		if fl.Tee != nil && fl != unstreamed && !crawler {
			ready = fl.Tee.Ready
		}
		select {
		case <-ready:
			if p.streamFrom(w, r, req, fl, own, status, stale != nil, arrived) {
				return
			}
			unstreamed = fl
			continue
		case <-fl.Done:
		case <-patience.C:
			reason = ReasonTimeout
			continue
		case <-r.Context().Done():
			return
		}
		switch {
		case fl.Err != nil:
			failure, reason = fl.Err, reasonFor(fl.Err)
		case fl.Private && !own, fl.Postponed != nil && fl.Entry == nil:
			// A prelude that was not stored has holes only a resume fills: this request
			// renders the page whole.
			p.metrics.privateRenders.WithLabelValues(p.route).Inc()
			ctx, withdraw := context.WithCancel(flightContext(r.Context())) // a storable result is stored
			defer withdraw()
			fl, own, status = p.renderForOne(ctx, key, p.loaderRequest(r, req), req, p.requestValues(r)), true, "sidecar-ssr; fwd=miss; detail=private"
		case stale != nil && p.status(fl.Resp) >= 500:
			// The page itself failed (its backend is down): stale-if-error covers that too.
			status, reason = fmt.Sprintf("%s; fwd-status=%d", status, fl.Resp.GetStatus()), "server-error"
		case fl.Entry != nil && fl.FromShared:
			w.Header().Set("Server-Timing", "cache;desc=shared")
			p.serveEntry(w, r, req, fl.Entry, fmt.Sprintf("%s; fwd-status=%d; detail=shared", status, fl.Entry.Status))
			return
		case fl.Entry != nil:
			setTiming(w.Header(), fl)
			p.serveEntry(w, r, req, fl.Entry, fmt.Sprintf("%s; fwd-status=%d; stored", status, fl.Entry.Status))
			return
		default:
			p.write(w, r, req, fl, fmt.Sprintf("%s; fwd-status=%d", status, fl.Resp.GetStatus()))
			return
		}
	}
	if stale != nil {
		p.log.Warn("serving stale copy", "reason", reason, "page", req.Page, "url", req.Url, "request_id", middleware.RequestID(r.Context()))
		p.serveEntry(w, r, req, stale, fmt.Sprintf("%s; ttl=%d; detail=%s", status, seconds(stale.TTLAt(p.cache.Now())), reason))
		return
	}
	p.fallback(w, r, req, reason, failure, status, p.decision(fl, own))
}

// decision is what the flight's loader decided, for a request that falls back: nil before
// the loader is done, and for a request that joined a flight whose decision is private.
func (p *page) decision(fl *flight, own bool) *Result {
	l := fl.Result.Load()
	if l == nil || (!own && l.private()) {
		return nil
	}
	return l
}

// bypass says why a request must not use the cache, or "".
func (p *page) bypass(r *http.Request) string {
	switch {
	case p.policy.TTL == 0:
		return "uncacheable-route"
	case r.Header.Get("Authorization") != "":
		return "authorization"
	}
	for _, name := range p.personal {
		if _, err := r.Cookie(name); err == nil {
			return "personalized"
		}
	}
	return ""
}

func (p *page) request(r *http.Request) *ssrv1.RenderRequest {
	req := &ssrv1.RenderRequest{Page: p.name}
	if p.unmatched {
		req.Page = p.names.notFoundPage()
		return req
	}
	req.Url = p.keys.renderURL(r.URL)
	// The configured route's names as well: they are how path values reach the page through
	// a router that leaves r.Pattern empty (the shop sets them: docs/go.md, "Other routers"),
	// or one a ServeMux hands a subtree to. Every value comes from the path, which the cache
	// key holds.
	mounted := mountedWildcards(r)
	if n := len(mounted) + len(p.params); n > 0 {
		req.Params = make(map[string]string, n)
		for _, names := range [2][]string{mounted, p.params} {
			for _, name := range names {
				req.Params[name] = r.PathValue(name)
			}
		}
	}
	req.Variants = p.keys.variantValues(r)
	return req
}

// validUTF8 reports whether req can be sent: protobuf strings must be UTF-8, and a path
// segment such as %FF, or a header's raw bytes, need not be.
func validUTF8(req *ssrv1.RenderRequest) bool {
	for _, m := range []map[string]string{req.Params, req.Variants} {
		for _, v := range m {
			if !utf8.ValidString(v) {
				return false
			}
		}
	}
	return utf8.ValidString(req.Url)
}

// status is the status to answer with, or 0 when the page chose an impossible one.
func (p *page) status(resp *ssrv1.RenderResponse) int {
	status := int(resp.GetStatus())
	switch {
	case status == 0:
		status = http.StatusOK
	case status < 200 || status > 599:
		return 0
	}
	if p.unmatched && status == http.StatusOK {
		return http.StatusNotFound
	}
	return status
}

// blockedHeaders are headers the edge owns; a page cannot set them.
var blockedHeaders = map[string]bool{
	"Content-Length": true, "Content-Type": true, "Content-Encoding": true, "Transfer-Encoding": true,
	"Connection": true, "Keep-Alive": true, "Upgrade": true, "Trailer": true, "Te": true,
	"Proxy-Connection": true, "X-Ssr-Fallback": true, "X-Request-Id": true, "Server-Timing": true,
	"Etag": true, "Age": true, "Cache-Status": true,
}

func pageHeaders(resp *ssrv1.RenderResponse) http.Header {
	h := http.Header{}
	for _, kv := range resp.GetHeaders() {
		if name := http.CanonicalHeaderKey(kv.GetName()); !blockedHeaders[name] {
			h.Add(name, kv.GetValue())
		}
	}
	return h
}

// serveAlone renders for this request alone (bypass, hit-for-miss) within the render timeout.
// Nothing else waits for the result, so once this request stops waiting (answered, fallen
// back, gone) the call is cancelled: the renderer drops the render if it is still queued and
// aborts it in its worker if it has started (React's abort: the worker and the renders
// beside it go on). Under overload the workers then render pages somebody still waits for,
// not pages whose requesters already got the shell or left. (A cacheable key's flight,
// which others may join and which fills the cache, runs on a context of its own: page.flightFor.)
func (p *page) serveAlone(w http.ResponseWriter, r *http.Request, req *ssrv1.RenderRequest, key string, lr *http.Request, cacheStatus string) {
	base := context.WithoutCancel(r.Context())
	if key != "" { // a hit-for-miss render whose result may be stored
		base = flightContext(base)
	}
	ctx, withdraw := context.WithCancel(base)
	defer withdraw()
	p.await(w, r, req, key, p.renderForOne(ctx, key, lr, req, p.requestValues(r)), true, cacheStatus, nil)
}

// write answers with a flight's rendered response that was not stored.
func (p *page) write(w http.ResponseWriter, r *http.Request, req *ssrv1.RenderRequest, fl *flight, cacheStatus string) {
	resp := fl.Resp
	status := p.status(resp)
	if status == 0 {
		p.fallback(w, r, req, ReasonInvalidReply, fmt.Errorf("page %q answered status %d", req.Page, resp.GetStatus()), cacheStatus, nil)
		return
	}
	h := w.Header()
	for k, vs := range pageHeaders(resp) {
		h[k] = vs
	}
	h.Set("Cache-Status", cacheStatus)
	h.Add("Vary", p.vary)
	setTiming(h, fl)
	if status >= 300 && status < 400 {
		w.WriteHeader(status)
		return
	}
	doc := p.documentPage(req, resp, fl)
	doc.Nonce = p.nonceFor(r)
	p.respondDocument(w, r, status, doc)
}
