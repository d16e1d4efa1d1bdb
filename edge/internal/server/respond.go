package server

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"iter"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// serveEntry answers from a stored entry in the coding the client prefers, with Age, a
// strong ETag per coding, and 304 when If-None-Match matches; req is the request's render
// request, which a stored prelude's resume sends.
func (p *page) serveEntry(w http.ResponseWriter, r *http.Request, req *ssrv1.RenderRequest, e *htmlcache.Entry, cacheStatus string) {
	h := w.Header()
	for k, vs := range e.Header {
		h[k] = slices.Clone(vs) // the entry is shared: never let a writer append to its slices
	}
	h.Set("Cache-Status", cacheStatus)
	h.Set("Age", strconv.Itoa(max(0, seconds(p.cache.Now().Sub(e.Stored)))))
	if h.Get("Server-Timing") == "" {
		h.Set("Server-Timing", "cache;desc=hit")
	}
	h.Add("Vary", p.vary)
	if e.Bodies == nil { // a stored redirect
		w.WriteHeader(e.Status)
		return
	}
	if e.Resume != nil {
		p.serveResumed(w, r, req, e, cacheStatus)
		return
	}
	if e.NonceAt != nil {
		p.respondWithNonce(w, r, e)
		return
	}
	offered := storedCodings
	if len(e.Bodies) == 1 { // too small to be worth compressing
		offered = nil
	}
	coding := negotiate(r.Header.Get("Accept-Encoding"), offered)
	tag := e.ETag
	if coding != "" {
		tag = strings.TrimSuffix(tag, `"`) + "-" + coding + `"`
		h.Set("Content-Encoding", coding)
	}
	h.Set("ETag", tag)
	if e.Status == http.StatusOK && etagMatches(r.Header.Get("If-None-Match"), tag) {
		h.Del("Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	p.respond(w, e.Status, e.Bodies[coding])
}

var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 256<<10); return &b }}

// maxPooledBufferBytes: a buffer that grew past this for a large page goes to the garbage
// collector, not back to buffers. The pool keeps what it is given at full size for any
// later response, so every buffer that a page of several MB once filled would stay that
// large. 1 MiB is five times the demo's largest page.
const maxPooledBufferBytes = 1 << 20

// putBuffer gives *bp back to buffers, holding b emptied, unless b grew too large to keep.
func putBuffer(bp *[]byte, b []byte) {
	if cap(b) > maxPooledBufferBytes {
		return
	}
	*bp = b[:0]
	buffers.Put(bp)
}

// respondDocument writes doc, compressed in the coding the client prefers among
// liveCodings. Uncompressed, the page's HTML is written from where it is (a borrowed
// response's receive buffer) between the document's parts before and after it; compressed,
// the document is assembled in a pooled buffer first.
func (p *page) respondDocument(w http.ResponseWriter, r *http.Request, status int, doc document.Page) {
	bp := buffers.Get().(*[]byte)
	var body []byte
	defer func() { putBuffer(bp, body) }()
	if negotiate(r.Header.Get("Accept-Encoding"), liveCodings) == "" {
		var at int
		if body, at = p.shell.AppendAround((*bp)[:0], doc); at >= 0 {
			h := w.Header()
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Content-Length", strconv.Itoa(len(body)+len(doc.HTML)))
			w.WriteHeader(status)
			if _, err := w.Write(body[:at]); err == nil {
				if _, err := w.Write(doc.HTML); err == nil {
					w.Write(body[at:])
				}
			}
			return
		}
	} else {
		body = p.shell.Append((*bp)[:0], doc)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	writeCompressed(w, r, status, body)
}

// respondWithNonce answers from a stored document made without nonces, with this
// response's own put in as the stored bytes are written: the response holds no copy of the
// page, only, when compressed, an encoder of fixed size, for as long as its client takes
// to read it. No ETag: a 304 would keep the body of an earlier nonce, which this response's
// Content-Security-Policy does not allow.
func (p *page) respondWithNonce(w http.ResponseWriter, r *http.Request, e *htmlcache.Entry) {
	doc, nonce := e.Bodies[""], p.nonceFor(r)
	size := document.NoncedLen(doc, e.NonceAt, nonce)
	coding := ""
	if size >= minCompressBytes {
		coding = negotiate(r.Header.Get("Accept-Encoding"), liveCodings)
	}
	parts := document.NoncedParts(doc, e.NonceAt, nonce)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	var enc streamEncoder
	if coding != "" {
		if e, release, ok := newStreamEncoder(r, w, coding); ok {
			enc = e
			defer release()
		}
	}
	if enc == nil {
		h.Set("Content-Length", strconv.Itoa(size))
		w.WriteHeader(e.Status)
		writeAll(w, parts)
		return
	}
	h.Set("Content-Encoding", coding)
	w.WriteHeader(e.Status)
	// The pieces between nonces are small, and brotli at quality 1 compresses each write
	// on its own (a hash table and Huffman codes per write): gathered first, they are
	// compressed as whole blocks.
	in := encoderInputs.Get().(*bufio.Writer)
	in.Reset(enc)
	defer encoderInputs.Put(in)
	if writeAll(in, parts) == nil && in.Flush() == nil {
		enc.Close()
	}
}

// encoderInputs gather what goes into a stream encoder.
var encoderInputs = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 32<<10) }}

// writeAll writes parts to w in order, up to the first error: the client has gone.
func writeAll(w io.Writer, parts iter.Seq[[]byte]) error {
	for part := range parts {
		if _, err := w.Write(part); err != nil {
			return err
		}
	}
	return nil
}

func (p *page) respond(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	writeBody(w, status, body)
}

// writeCompressed writes body, compressed in the coding the client prefers among liveCodings.
func writeCompressed(w http.ResponseWriter, r *http.Request, status int, body []byte) {
	coding := ""
	if len(body) >= minCompressBytes {
		coding = negotiate(r.Header.Get("Accept-Encoding"), liveCodings)
	}
	if coding == "" {
		writeBody(w, status, body)
		return
	}
	cp := buffers.Get().(*[]byte)
	compressed := compressLive((*cp)[:0], coding, body)
	defer putBuffer(cp, compressed)
	w.Header().Set("Content-Encoding", coding)
	writeBody(w, status, compressed)
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// setTiming reports where a flight's render went (Server-Timing): queue (waiting in the
// renderer for a worker), load and render (the page), worker (the worker's whole part, with
// its thread id), renderer (from the call's arrival there to its reply: the worker plus the
// hand-offs on the renderer's main thread) and hop (the call as the edge saw it less the
// renderer's part: both sockets, HTTP/2 and the scheduling of both processes). A slow
// response's phases say which of them made it slow (bench/README.md, "Where the tail comes
// from").
func setTiming(h http.Header, fl *flight) {
	t := fl.Resp.GetTiming()
	if t == nil {
		h.Set("Server-Timing", "cache;desc=miss")
		return
	}
	ms := func(us uint64) float64 { return float64(us) / 1e3 }
	v := fmt.Sprintf("cache;desc=miss, queue;dur=%.2f, load;dur=%.2f, render;dur=%.2f, worker;dur=%.2f;desc=%d",
		ms(t.GetQueueUs()), ms(t.GetLoadUs()), ms(t.GetRenderUs()), ms(t.GetWorkerUs()), t.GetWorkerId())
	if in := t.GetRendererUs(); in > 0 {
		// The renderer's part lies inside the call; a renderer that says otherwise gets 0.
		hop := max(0, fl.Call-time.Duration(in)*time.Microsecond)
		v += fmt.Sprintf(", renderer;dur=%.2f, hop;dur=%.2f", ms(in), float64(hop)/1e6)
	}
	h.Set("Server-Timing", v)
}

// etag is a strong validator of the identity body.
func etag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

// etagMatches applies If-None-Match's weak comparison (RFC 9110 §13.1.2).
func etagMatches(ifNoneMatch, tag string) bool {
	if ifNoneMatch == "" {
		return false
	}
	for candidate := range strings.SplitSeq(ifNoneMatch, ",") {
		candidate = strings.TrimPrefix(strings.TrimSpace(candidate), "W/")
		if candidate == "*" || candidate == tag {
			return true
		}
	}
	return false
}

// seconds rounds d down to whole seconds, toward negative infinity for negative d.
func seconds(d time.Duration) int {
	s := int(d / time.Second)
	if d < 0 && d%time.Second != 0 {
		s--
	}
	return s
}

// documentPage is what the document of a rendered response holds; fl's deferred values as
// settled so far.
func (p *page) documentPage(req *ssrv1.RenderRequest, resp *ssrv1.RenderResponse, fl *flight) document.Page {
	name := resp.GetPage()
	if name == "" {
		name = req.Page
	}
	props := resp.GetPropsJson()
	if len(props) == 0 {
		props = []byte("{}")
	}
	var decided *Result
	if fl != nil {
		decided = fl.Result.Load()
	}
	return p.dress(document.Page{
		Name: name, URL: req.Url, Params: req.Params,
		Head: resp.GetHead(), HTML: resp.GetHtml(), PropsJSON: props, NoncePlaceholder: p.noncePlaceholder,
		Deferred: deferredOf(fl).forDocument(), ClientBuild: p.clientBuild(resp.GetClientBuildId()),
	}, decided)
}

// dress adds what is set on the page's document besides its render: the bundle's lang and
// head tags, and the head its loader decided for this render (decided: nil when none ran).
func (p *page) dress(doc document.Page, decided *Result) document.Page {
	if b := p.bundleExports(); b != nil {
		doc.Lang, doc.ExtraHead = b.Lang, b.DocumentHead
	}
	if decided != nil && decided.Head != "" {
		if doc.ExtraHead != "" {
			doc.ExtraHead += "\n"
		}
		doc.ExtraHead += decided.Head
	}
	return doc
}

// nonceFor is r's script nonce, or "".
func (p *page) nonceFor(r *http.Request) string {
	if p.nonce == nil {
		return ""
	}
	return p.nonce(r)
}
