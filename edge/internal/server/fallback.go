package server

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/middleware"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/renderclient"
)

// The fallback vocabulary: why a request got the client-side-render shell (or a stale copy)
// instead of a fresh server render. Each reason is sent in X-SSR-Fallback, in Cache-Status's
// detail=, in the outcome label of edge_requests_total and on the request's span, so
// dashboards and clients read the same words.
const (
	// ReasonUnavailable: the renderer could not be reached, is draining, or the circuit
	// is open.
	ReasonUnavailable = "renderer-unavailable"
	// ReasonTimeout: the render timeout (render_timeout) passed before the render ended.
	ReasonTimeout = "timeout"
	// ReasonDeadline: the hard timeout (hard_timeout) ended the render call.
	ReasonDeadline = "deadline-exceeded"
	// ReasonOverloaded: no render slot was free (errShed), or the renderer refused the call
	// at once: its queue, or every worker's pending renders, full.
	ReasonOverloaded = "overloaded"
	// ReasonTooLarge: the page was over max_page_mb, in the worker or on the wire.
	ReasonTooLarge = "page-too-large"
	// ReasonRenderError: the page threw, its worker died, or anything not named here.
	ReasonRenderError = "render-error"
	// ReasonWorkerLost: the render's worker died for another render beside it (one that
	// held its thread past its deadline, or ran it out of heap), and the renderer could not
	// try it again on another worker. Not this page's fault: it counts toward no quarantine.
	ReasonWorkerLost = "worker-lost"
	// ReasonUnknownPage: the bundle has no page of that name.
	ReasonUnknownPage = "unknown-page"
	// ReasonBadRequest: the renderer refused the request's arguments.
	ReasonBadRequest = "bad-request"
	// ReasonInvalidReply: the page answered a status the edge cannot serve.
	ReasonInvalidReply = "invalid-response"
	// ReasonQuarantined: the request's renders killed workers, and the renderer refuses it
	// for a while.
	ReasonQuarantined = "quarantined"
	// ReasonLoadError: the page's Go loader failed; the only reason served with 503.
	ReasonLoadError = "load-error"
)

// errShed reports that no render slot was free.
var errShed = errors.New("edge: every render slot is taken (render_slots)")

// errNoNotFoundPage reports a render of the not-found page while the renderer's bundle names
// none: its document names no page, and the app's client renders its own notFoundPage.
var errNoNotFoundPage = errors.New(noNotFoundPage)

// The renderer's codes whose gRPC status alone would name the wrong reason.
var (
	codeQuarantined  = ssrv1.RenderErr_RENDER_ERR_QUARANTINED.String()
	codePageTooLarge = ssrv1.RenderErr_RENDER_ERR_PAGE_TOO_LARGE.String()
	codeWorkerLost   = ssrv1.RenderErr_RENDER_ERR_WORKER_LOST.String()
)

// reasonFor names a render failure for X-SSR-Fallback.
func reasonFor(err error) string {
	switch {
	case errors.Is(err, errShed):
		return ReasonOverloaded
	case isLoadError(err):
		return ReasonLoadError
	case errors.Is(err, errNoNotFoundPage):
		return ReasonUnknownPage
	}
	var e *renderclient.Error
	if !errors.As(err, &e) {
		if errors.Is(err, context.DeadlineExceeded) {
			return ReasonDeadline
		}
		return ReasonRenderError
	}
	switch e.RendererCode {
	case codeQuarantined: // its renders killed workers: the renderer refuses it for a while
		return ReasonQuarantined
	case codePageTooLarge: // refused in the worker, before it crossed the socket
		return ReasonTooLarge
	case codeWorkerLost: // ABORTED: the renderer is there, and the page did nothing wrong
		return ReasonWorkerLost
	}
	switch e.Status.Code() {
	case codes.Unavailable, codes.Canceled:
		return ReasonUnavailable
	case codes.DeadlineExceeded:
		return ReasonDeadline
	case codes.ResourceExhausted:
		// grpc-go reports a reply over MaxPageBytes with the same code as a full queue;
		// only the renderer's trailer says which it was.
		if e.RendererCode != "" {
			return ReasonOverloaded
		}
		return ReasonTooLarge
	case codes.NotFound:
		return ReasonUnknownPage
	case codes.InvalidArgument:
		return ReasonBadRequest
	default:
		return ReasonRenderError
	}
}

// fallback answers with the client-side-render shell: the browser renders the page itself,
// with props when a Go loader computed them (else the app gets its data its own way). What
// the loader decided (decision, nil when it did not run or is not done) holds as it would
// have with the render: its redirect, its not-found page, its status, its headers.
func (p *page) fallback(w http.ResponseWriter, r *http.Request, req *ssrv1.RenderRequest, reason string, err error, cacheStatus string, decision *Result) {
	attrs := []any{"reason", reason, "page", req.Page, "url", req.Url, "request_id", middleware.RequestID(r.Context())}
	if err != nil {
		attrs = append(attrs, "err", err.Error())
	}
	level := slog.LevelWarn
	if reason == ReasonUnknownPage {
		level = slog.LevelError // a page name the bundle lacks: the deploy is broken
	}
	p.log.Log(r.Context(), level, "serving client-side-render fallback", attrs...)
	status, doc := http.StatusOK, document.Page{Name: req.Page, URL: req.Url, Params: req.Params}
	switch {
	case p.unmatched:
		status = http.StatusNotFound
	case reason == ReasonLoadError:
		// The shop's own data is missing: the browser could not do better than the server.
		// The page comes without props: the app's client renders its errorPage with status.
		status = loadStatus(err)
		doc.Status = status
	case reason == ReasonUnknownPage:
		status = http.StatusInternalServerError
		if p.names != nil && !errors.Is(err, errNoNotFoundPage) {
			p.names.refused(req.Page) // readiness says so, whatever the bundle was at start
		}
	}
	h := w.Header()
	if decision != nil {
		for k, vs := range decision.Header {
			if k = http.CanonicalHeaderKey(k); !blockedHeaders[k] {
				h[k] = vs
			}
		}
		doc.PropsJSON, doc.Deferred = decision.Props, decision.deferred.forDocument()
		d := decision.decided
		if d.redirect != "" {
			// Complete without the renderer: not a fallback.
			h.Set("Location", d.redirect)
			h.Set("Cache-Status", cacheStatus)
			h.Add("Vary", p.vary)
			w.WriteHeader(d.status)
			return
		}
		if d.notFound {
			doc.Name = p.names.notFoundPage() // "": the app's client renders its own
		}
		status = cmp.Or(d.status, status)
	}
	h.Set("X-SSR-Fallback", reason)
	h.Set("Cache-Control", "no-store")
	h.Set("Cache-Status", withDetail(cacheStatus, reason))
	h.Add("Vary", p.vary)
	doc.Nonce = p.nonceFor(r)
	if decision != nil && decision.deferred.pendingAny() {
		p.respondCarrying(w, r, status, p.dress(doc, decision), decision.deferred)
		return
	}
	p.respondDocument(w, r, status, p.dress(doc, decision))
}

// respondCarrying answers with doc, a client-side-render document, whose deferred values
// are not all in: its head and empty root at once, the browser fetching the client build
// meanwhile, and its end once every value has settled, with them all, or at the route's
// stream timeout, as a streamed page's live response ends, with those in by then. The
// client build's module scripts run once the document is complete: the browser renders
// the page with the values Go computed, not its error UI, and not later than the timeout.
func (p *page) respondCarrying(w http.ResponseWriter, r *http.Request, status int, doc document.Page, run *deferredRun) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Accel-Buffering", "no")
	out := newStreamWriter(w, r, negotiate(r.Header.Get("Accept-Encoding"), liveCodings))
	defer out.release()
	w.WriteHeader(status)
	open, _ := p.shell.Split(doc)
	out.Write(open)
	if err := out.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return // the client has gone
	}
	wait := time.NewTimer(p.timeouts.Stream)
	defer wait.Stop()
	select {
	case <-run.done:
	case <-wait.C:
	case <-r.Context().Done():
		return
	}
	doc.Deferred = run.forDocument()
	_, closing := p.shell.Split(doc)
	out.Write(closing)
	out.Close()
}

// withDetail sets the detail parameter of a Cache-Status member (RFC 9211 allows one: a
// structured-field parser keeps the last): the fallback's reason replaces why the request
// went forward.
func withDetail(cacheStatus, detail string) string {
	if i := strings.Index(cacheStatus, "; detail="); i >= 0 {
		rest := cacheStatus[i+len("; detail="):]
		end := strings.Index(rest, ";")
		if end < 0 {
			end = len(rest)
		}
		cacheStatus = cacheStatus[:i] + rest[end:]
	}
	return cacheStatus + "; detail=" + detail
}
