package server

// Pages that stream (a route's `stream: true`): the renderer's RenderStream sends the head at
// the shell, then the body as React flushes it. The flight keeps what arrives in a tee, so
// every request waiting on it, coalesced ones included, writes the bytes as they come
// (streamFrom), and the flight still ends with the whole response, stored as any other.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/middleware"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// StreamRenderer renders pages that stream; *renderclient.Client is the real one. A Renderer
// without it renders every page whole.
type StreamRenderer interface {
	RenderStream(ctx context.Context, req *ssrv1.RenderStreamRequest) (RenderStream, error)
}

// RenderStream is one RenderStream call: Recv returns io.EOF after the last message; Send
// settles a deferred value, and CloseSend says that no more will come. An alias of the
// literal type, which renderclient's method returns too.
type RenderStream = interface {
	Recv() (*ssrv1.RenderStreamResponse, error)
	Send(*ssrv1.RenderStreamRequest) error
	CloseSend() error
}

// renderStream is render for a page that streams: it fills the flight's tee as messages come
// and returns the whole response, its body joined, as Render would have. It gives s back at
// the shell: what is left is the wait for the page's data, which takes no worker of its own.
func (p *page) renderStream(ctx context.Context, sr StreamRenderer, fl *flight, req *ssrv1.RenderRequest, s *slot) (resp *ssrv1.RenderResponse, err error) {
	t := fl.Tee
	defer func() { t.End(err) }()
	stream, err := sr.RenderStream(ctx, &ssrv1.RenderStreamRequest{Render: req, Nonce: p.noncePlaceholder})
	if err != nil {
		return nil, err
	}
	go sendDeferred(ctx, deferredOf(fl), stream)
	var body []byte
	resp, _, err = receive(stream, func(head *ssrv1.RenderResponse) {
		head.PropsJson = renderedProps(req, head)
		shown := proto.Clone(head).(*ssrv1.RenderResponse)
		if l := fl.Result.Load(); l != nil {
			applyResult(shown, l)
		}
		t.Head, t.Private, t.ShellAt = shown, private(shown), time.Now()
		// Before ready: whoever sees the shell may count on the slot being free.
		s.release()
		close(t.Ready)
	}, func(html []byte) {
		body = append(body, html...)
		t.Add(html)
	})
	if err != nil {
		return nil, err
	}
	resp.Html = body
	return resp, nil
}

// errInvalidStream is a RenderStream whose messages break render.proto's order: a renderer
// bug, which falls back as an invalid reply.
type errInvalidStream string

func (e errInvalidStream) Error() string { return "renderer stream: " + string(e) }

// streamFrom answers with the flight's render as it is produced, once its head is ready. It
// reports false, having written nothing, when the head is not for streaming: a redirect, a
// status the edge refuses, a private result this request only joined, or a page error that
// a stale copy answers better; the request then waits for the flight's end as before.
//
// The body goes out as it comes, each batch flushed through the compressor and the
// connection. At the route's stream deadline, counted from the request's arrival, the
// document is closed with the boundaries still pending left to the browser (partial); the
// render goes on for the cache.
func (p *page) streamFrom(w http.ResponseWriter, r *http.Request, req *ssrv1.RenderRequest, fl *flight, own bool, cacheStatus string, stale bool, arrived time.Time) bool {
	t := fl.Tee
	code := p.status(t.Head)
	if code == 0 || (code >= 300 && code < 400) || (t.Private && !own) || (stale && code >= 500) {
		return false
	}
	h := w.Header()
	for k, vs := range pageHeaders(t.Head) {
		h[k] = vs
	}
	h.Set("Cache-Status", withDetail(fmt.Sprintf("%s; fwd-status=%d", cacheStatus, code), "streamed"))
	h.Add("Vary", p.vary)
	h.Set("Content-Type", "text/html; charset=utf-8")
	// nginx buffers a proxied response unless told otherwise, which would hold the shell.
	h.Set("X-Accel-Buffering", "no")
	ms := func(us uint64) float64 { return float64(us) / 1e3 }
	timing := t.Head.GetTiming()
	h.Set("Server-Timing", fmt.Sprintf("cache;desc=miss, queue;dur=%.2f, load;dur=%.2f, shell;dur=%.2f",
		ms(timing.GetQueueUs()), ms(timing.GetLoadUs()), float64(t.ShellAt.Sub(arrived))/1e6))
	out := newStreamWriter(w, r, negotiate(r.Header.Get("Accept-Encoding"), liveCodings))
	defer out.release()
	w.WriteHeader(code)

	doc := p.documentPage(req, t.Head, fl)
	doc.Nonce = p.nonceFor(r)
	open, _ := p.shell.Split(doc)
	// The document's end holds the deferred values as they are when it is written.
	closing := func() []byte {
		doc.Deferred = deferredOf(fl).forDocument()
		_, c := p.shell.Split(doc)
		return c
	}
	out.Write(open)
	deadline := time.NewTimer(time.Until(arrived.Add(p.timeouts.Stream)))
	defer deadline.Stop()
	next := 0
	var nonced []byte // a chunk with this response's nonce
	flushChecked := false
	for {
		chunks, ended, err, more := t.From(next)
		for _, c := range chunks {
			if p.noncePlaceholder != "" {
				nonced = document.AppendNonced(nonced[:0], c, p.noncePlaceholder, doc.Nonce)
				c = nonced
			}
			out.Write(c)
		}
		next += len(chunks)
		if ended {
			if err != nil {
				p.log.Warn("streamed render failed after its shell: boundaries still pending are left to the browser",
					"err", err, "page", req.Page, "url", req.Url, "request_id", middleware.RequestID(r.Context()))
				p.closePartial(out, w, doc.Nonce, closing(), "error")
				return true
			}
			out.Write(closing())
			out.Close()
			w.Header().Set(http.TrailerPrefix+"Server-Timing", fmt.Sprintf("stream;dur=%.2f", float64(time.Since(arrived))/1e6))
			return true
		}
		if err := out.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return true // the client has gone
		} else if !flushChecked {
			flushChecked = true
			p.checkFlushed(r, err)
		}
		select {
		case <-more:
		case <-deadline.C:
			p.closePartial(out, w, doc.Nonce, closing(), "timeout")
			return true
		case <-r.Context().Done():
			return true
		}
	}
}

// closePartial ends a streamed document whose render has not completed: the boundaries
// still pending are switched to client rendering, as React's own abort does (it marks each
// pending boundary's comment "$!" and retries its hydration), and marked in the trailers.
func (p *page) closePartial(out *streamWriter, w http.ResponseWriter, nonce string, closing []byte, why string) {
	p.metrics.streamPartial.WithLabelValues(p.route, why).Inc()
	out.Write(document.AbortPending(nonce))
	out.Write(closing)
	out.Close()
	w.Header().Set(http.TrailerPrefix+"X-SSR-Fallback", "partial")
	w.Header().Set(http.TrailerPrefix+"Server-Timing", "ssr-fallback;desc=partial-"+why)
}

// streamWriter writes a streamed response through its compressor, if any, and flushes both
// on Flush.
type streamWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	enc     streamEncoder // nil: identity
	release func()
}

// newStreamWriter sets Content-Encoding for coding ("" for identity); call it before
// WriteHeader.
func newStreamWriter(w http.ResponseWriter, r *http.Request, coding string) *streamWriter {
	s := &streamWriter{w: w, rc: http.NewResponseController(w), release: func() {}}
	if coding == "" {
		return s
	}
	if enc, release, ok := newStreamEncoder(r, w, coding); ok {
		s.enc, s.release = enc, release
		w.Header().Set("Content-Encoding", coding)
	}
	return s
}

func (s *streamWriter) Write(b []byte) {
	if s.enc != nil {
		s.enc.Write(b)
		return
	}
	s.w.Write(b)
}

// Flush pushes what was written to the client: an error when the connection is gone, or
// http.ErrNotSupported when no writer on the way can flush (the response is then written
// on, and reaches the client as net/http's buffer fills and at its end).
func (s *streamWriter) Flush() error {
	if s.enc != nil {
		if err := s.enc.Flush(); err != nil {
			return err
		}
	}
	return s.rc.Flush()
}

// exposeUnflushed makes a streamed route's edge_stream_unflushed_total series before any
// lost flush: zero is a count worth seeing. m is nil in tests that need no metrics.
func (m *Metrics) exposeUnflushed(route string) {
	if m == nil {
		return
	}
	for _, reason := range []string{"not-supported", "swallowed"} {
		m.streamUnflushed.WithLabelValues(route, reason)
	}
}

// checkFlushed counts and logs, once a page, a streamed response whose first flush (err
// its result) did not reach the connection: nothing streams then, and nothing else would
// tell. Behind Wrap, a flush that never came through Wrap's writer was taken by a writer
// in between that did not pass it on.
func (p *page) checkFlushed(r *http.Request, err error) {
	reason := ""
	if errors.Is(err, http.ErrNotSupported) {
		reason = "not-supported"
	} else if outer, ok := r.Context().Value(answeredKey{}).(*unanswered); ok && !outer.flushed {
		reason = "swallowed"
	}
	if reason == "" {
		return
	}
	p.metrics.streamUnflushed.WithLabelValues(p.route, reason).Inc()
	if p.unflushedSaid.CompareAndSwap(false, true) {
		p.log.Warn("a streamed page's flush did not reach the connection: its client gets the page only at its end (logged once a page; edge_stream_unflushed_total counts them). A router or middleware between Wrap and the page must pass Flush on to the writer it wraps",
			"page", p.name, "route", p.route, "reason", reason, "request_id", middleware.RequestID(r.Context()))
	}
}

// Close ends the compressed stream (its last block and checksum).
func (s *streamWriter) Close() {
	if s.enc != nil {
		s.enc.Close()
	}
}

// crawlers matches the User-Agent of a crawler or a link preview, which would not run the
// script that fills in what a stream left pending.
var crawlers = regexp.MustCompile(`(?i)bot|crawl|spider|slurp|facebookexternalhit|embedly|preview`)

// isCrawler reports whether r comes from a crawler, which gets a streaming page's complete
// document only.
func (p *page) isCrawler(r *http.Request) bool { return crawlers.MatchString(r.UserAgent()) }
