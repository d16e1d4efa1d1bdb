package server

// Partially prerendered pages (PageOptions.PerRequest): the page's shell, rendered once with
// every Suspense boundary that reads one of the request's own values left as a hole, is
// stored with React's postponed state (a miss's coalesced flight: prerender, entryFor); each
// request is answered with the stored shell at once and the holes, resumed for it with its
// own values, after it in the same response (serveResumed). A request that renders for
// itself alone (bypass, hit-for-miss, a private result) renders the page whole, its values
// as deferred values.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/middleware"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// RequestFunc computes one of a request's own values, as JSON, from the request itself (its
// cookies, its session), on every request; its context ends as a deferred value's does.
type RequestFunc func(*http.Request) ([]byte, error)

// prerendered reports whether the page is partially prerendered.
func (p *page) prerendered() bool { return len(p.perRequest) > 0 }

// isPrerender reports whether fl's render is the page's prerender: a prerendered page's shared
// flight, which has no tee, since no request streams it (each is answered from the stored
// shell once it is in).
func (p *page) isPrerender(fl *flight) bool { return p.prerendered() && fl.Tee == nil }

// requestValues are the page's per-request functions for r, as deferred functions; nil for a
// page that is not prerendered.
func (p *page) requestValues(r *http.Request) map[string]DeferredFunc {
	if !p.prerendered() {
		return nil
	}
	values := make(map[string]DeferredFunc, len(p.perRequest))
	for name, f := range p.perRequest {
		values[name] = func(ctx context.Context) ([]byte, error) { return f(r.WithContext(ctx)) }
	}
	return values
}

// holes is the prerender's list of deferred values: every per-request value, pending.
func (p *page) holes() []*ssrv1.Deferred {
	list := make([]*ssrv1.Deferred, 0, len(p.perRequest))
	for _, name := range slices.Sorted(maps.Keys(p.perRequest)) {
		list = append(list, &ssrv1.Deferred{Name: name})
	}
	return list
}

// prerender renders the page's shell (RenderStreamRequest.prerender): the response's HTML is
// the prelude, and fl.Postponed the state each request's resume starts from.
func (p *page) prerender(ctx context.Context, sr StreamRenderer, fl *flight, req *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
	stream, err := sr.RenderStream(ctx, &ssrv1.RenderStreamRequest{Render: req, Nonce: p.noncePlaceholder, Prerender: true})
	if err != nil {
		return nil, err
	}
	stream.CloseSend() // its values are holes: none is ever settled
	var body []byte
	resp, trailer, err := receive(stream, nil, func(html []byte) { body = append(body, html...) })
	if err != nil {
		return nil, err
	}
	resp.Html = body
	if postponed := trailer.GetPostponed(); len(postponed) > 0 {
		fl.Postponed = postponed
	}
	return resp, nil
}

// receive reads a RenderStream's messages in render.proto's order, passing the head (if
// head is not nil) and each body chunk on as they come, and returns the head, its timing the
// trailer's, and the trailer.
func receive(stream RenderStream, head func(*ssrv1.RenderResponse), html func([]byte)) (*ssrv1.RenderResponse, *ssrv1.RenderStreamTrailer, error) {
	var resp *ssrv1.RenderResponse
	var trailer *ssrv1.RenderStreamTrailer
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		switch part := m.GetPart().(type) {
		case *ssrv1.RenderStreamResponse_Head:
			if resp != nil {
				return nil, nil, errInvalidStream("a second head")
			}
			resp = part.Head
			if head != nil {
				head(resp)
			}
		case *ssrv1.RenderStreamResponse_Html:
			if resp == nil {
				return nil, nil, errInvalidStream("body before the head")
			}
			html(part.Html)
		case *ssrv1.RenderStreamResponse_Trailer:
			if resp == nil {
				return nil, nil, errInvalidStream("trailer before the head")
			}
			trailer = part.Trailer
			resp.Timing = trailer.GetTiming()
		}
	}
	if resp == nil {
		return nil, nil, errInvalidStream("no head")
	}
	return resp, trailer, nil
}

// preludeEntry fills e, for fl's prerender, with the document up to the end of the prelude
// and what its resume needs; false when it would not fit the cache.
func (p *page) preludeEntry(e *htmlcache.Entry, req *ssrv1.RenderRequest, fl *flight) bool {
	page := p.documentPage(req, fl.Resp, fl)
	doc, slots := p.shell.AppendOpenTemplate(nil, page)
	if !p.cache.Fits(len(doc)) {
		p.log.Warn("prelude too large to cache: requests for it render whole, side by side (hit-for-miss)",
			"for", p.passTTL, "page", req.Page, "url", req.Url, "bytes", len(doc), "limit", "a 16th of the cache (edge.cache_max_mb, ssr.Options.CacheMaxBytes)")
		return false
	}
	e.Bodies = map[string][]byte{"": doc}
	if p.nonce != nil {
		e.NonceAt = slots
	}
	e.ETag = etag(doc)
	e.Resume = &htmlcache.Resume{Page: page.Name, Props: page.PropsJSON, Postponed: fl.Postponed}
	return true
}

// serveResumed answers from a stored prelude, after serveEntry has set the stored headers:
// the document up to the prelude's end at once, then the holes, resumed for this request with
// its own values, then the document's end with them for hydration. A resume that fails or is
// still running at the stream deadline leaves its holes to the browser, which renders them:
// the response is never an error. The values and the resume are this request's alone, and
// end with it.
func (p *page) serveResumed(w http.ResponseWriter, r *http.Request, req *ssrv1.RenderRequest, e *htmlcache.Entry, cacheStatus string) {
	arrived := time.Now()
	ctx, cancel := context.WithTimeout(r.Context(), p.timeouts.Hard)
	defer cancel()
	run := p.startDeferred(ctx, req, &Result{Deferred: p.requestValues(r)})
	// Once the response has ended (its client gone too), nothing needs the values still
	// running: they are stopped.
	defer run.end(nil)
	h := w.Header() // serveEntry's, for a stored entry
	h.Set("Cache-Status", withDetail(cacheStatus, "resumed"))
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Accel-Buffering", "no")
	out := newStreamWriter(w, r, negotiate(r.Header.Get("Accept-Encoding"), liveCodings))
	defer out.release()
	w.WriteHeader(e.Status)
	nonce := p.nonceFor(r)
	for part := range document.NoncedParts(e.Bodies[""], e.NonceAt, nonce) {
		out.Write(part)
	}
	if err := out.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return // the client has gone
	}
	shell := time.Since(arrived)
	why, err := p.resume(ctx, r, out, req, e.Resume, run, nonce, arrived)
	if why == "gone" {
		return
	}
	if why != "" {
		if err != nil {
			p.log.Warn("resume failed after its prelude: its holes are left to the browser",
				"err", err, "page", e.Resume.Page, "url", req.Url, "request_id", middleware.RequestID(r.Context()))
		}
		p.metrics.streamPartial.WithLabelValues(p.route, why).Inc()
		out.Write(document.AbortPending(nonce))
		w.Header().Set(http.TrailerPrefix+"X-SSR-Fallback", "partial")
	}
	out.Write(document.AppendClose(nil, document.Page{
		Name: e.Resume.Page, URL: req.Url, Params: req.Params, PropsJSON: e.Resume.Props, Nonce: nonce, Deferred: run.forDocument(),
	}))
	out.Close()
	timing := fmt.Sprintf("shell;dur=%.2f, resume;dur=%.2f", float64(shell)/1e6, float64(time.Since(arrived)-shell)/1e6)
	if why != "" {
		timing += ", ssr-fallback;desc=partial-" + why
	}
	w.Header().Set(http.TrailerPrefix+"Server-Timing", timing)
}

// resume streams the holes of a stored prelude to out, the request's values sent into the
// render as they settle. It says why it stopped short ("error", "timeout", "gone": the client
// left) or "" when every hole was written.
func (p *page) resume(ctx context.Context, r *http.Request, out *streamWriter, req *ssrv1.RenderRequest, resume *htmlcache.Resume, run *deferredRun, nonce string, arrived time.Time) (string, error) {
	sr, ok := p.renderer.(StreamRenderer)
	if !ok {
		return "error", errors.New("the renderer cannot stream")
	}
	ctx, span := p.callSpan(ctx, renderSpan, resume.Page)
	stream, err := sr.RenderStream(p.outgoing(ctx), &ssrv1.RenderStreamRequest{
		Render: &ssrv1.RenderRequest{Page: resume.Page, Url: req.Url, Params: req.Params, Variants: req.Variants,
			PropsJson: resume.Props, Deferred: run.pending()},
		Nonce: p.noncePlaceholder, Resume: resume.Postponed,
	})
	if err != nil {
		endRender(span, err)
		return "error", err
	}
	go sendDeferred(ctx, run, stream)
	chunks := make(chan []byte, 8)
	ended := make(chan error, 1)
	go func() {
		_, _, err := receive(stream, nil, func(html []byte) {
			select {
			case chunks <- html:
			case <-ctx.Done():
			}
		})
		ended <- err
	}()
	deadline := time.NewTimer(time.Until(arrived.Add(p.timeouts.Stream)))
	defer deadline.Stop()
	var nonced []byte
	write := func(c []byte) {
		if p.noncePlaceholder != "" {
			nonced = document.AppendNonced(nonced[:0], c, p.noncePlaceholder, nonce)
			c = nonced
		}
		out.Write(c)
	}
	for {
		select {
		case c := <-chunks:
			write(c)
			if err := out.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
				return "gone", nil
			}
		case err := <-ended:
			// What was received before the end, in order.
			for len(chunks) > 0 {
				write(<-chunks)
			}
			endRender(span, err)
			if err != nil {
				return "error", err
			}
			return "", nil
		case <-deadline.C:
			endRender(span, context.DeadlineExceeded)
			return "timeout", nil
		case <-r.Context().Done():
			endRender(span, context.Canceled)
			return "gone", nil
		}
	}
}
