package server

import (
	"context"
	"errors"
	"net/http"

	"google.golang.org/grpc/codes"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/renderclient"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/ssr/v1"
)

// The fallback vocabulary: why a request got the client-side-render shell (or a stale copy)
// instead of a fresh server render. Each reason is sent in X-SSR-Fallback, in Cache-Status's
// detail=, in the outcome label of edge_requests_total and on the request's span, so
// dashboards and clients read the same words.
const (
	// ReasonUnavailable: the renderer could not be reached, is draining, or the circuit
	// is open.
	ReasonUnavailable = "renderer-unavailable"
	// ReasonTimeout: the soft deadline (render_timeout) passed before the render ended.
	ReasonTimeout = "timeout"
	// ReasonDeadline: the hard deadline (hard_timeout) ended the render call.
	ReasonDeadline = "deadline-exceeded"
	// ReasonOverloaded: no render slot was free (errShed), or the renderer's queue was full.
	ReasonOverloaded = "overloaded"
	// ReasonTooLarge: the page was over max_page_mb, in the worker or on the wire.
	ReasonTooLarge = "page-too-large"
	// ReasonRenderError: the page threw, its worker died, or anything not named here.
	ReasonRenderError = "render-error"
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
var errShed = errors.New("edge: max_renders_in_flight reached")

// The renderer's codes whose gRPC status alone would name the wrong reason.
const (
	codeQuarantined  = "RENDER_ERR_QUARANTINED"
	codePageTooLarge = "RENDER_ERR_PAGE_TOO_LARGE"
)

// reasonFor names a render failure for X-SSR-Fallback.
func reasonFor(err error) string {
	switch {
	case errors.Is(err, errShed):
		return ReasonOverloaded
	case isLoadError(err):
		return ReasonLoadError
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
// with props when a Go loader computed them (else the app gets its data its own way).
func (p *page) fallback(w http.ResponseWriter, r *http.Request, req *ssrv1.RenderRequest, reason string, err error, cacheStatus string, props []byte) {
	attrs := []any{"reason", reason, "page", req.Page, "url", req.Url, "request_id", RequestID(r.Context())}
	if err != nil {
		attrs = append(attrs, "err", err.Error())
	}
	p.log.Warn("serving client-side-render fallback", attrs...)
	status := http.StatusOK
	switch {
	case p.unmatched:
		status = http.StatusNotFound
	case reason == ReasonLoadError:
		// The shop's own data is missing: the browser could not do better than the server.
		status = http.StatusServiceUnavailable
	}
	h := w.Header()
	h.Set("X-SSR-Fallback", reason)
	h.Set("Cache-Control", "no-store")
	h.Set("Cache-Status", cacheStatus+"; detail="+reason)
	h.Add("Vary", p.vary)
	p.respondDocument(w, r, status, document.Page{Name: req.Page, URL: req.Url, Params: req.Params, PropsJSON: props})
}
