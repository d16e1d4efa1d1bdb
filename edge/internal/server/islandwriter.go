package server

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
)

// Islands in the HTML the shop writes itself, by whatever renders it: a template executed
// into the writer, Gin's c.HTML, Echo's c.Render. Behind Wrap, a response that marks islands
// (IslandFuncs) has them rendered in one renderer call (renderIslands), each in its place
// (appendIslands); a marker never reaches the client with its props.

// islandsIn renders the islands that the HTML responses of h mark, for Wrap.
func (s *Site) islandsIn(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		iw := &islandWriter{ResponseWriter: w, site: s, r: r}
		defer iw.end() // a handler's panic too: its encoder goes back
		h.ServeHTTP(iw, r)
	})
}

// islandWriter passes a response on as it is written until a write holds an island's
// marker; from there it holds the response until the handler flushes or returns, then
// writes what it held with the islands marked in it rendered (one renderer call), the
// client build linked before the first. With Options.CompressHTML it compresses what it
// writes. A response that is not HTML, is already encoded, or is a page's passes through
// unread.
type islandWriter struct {
	http.ResponseWriter
	site *Site
	r    *http.Request

	decided, scanning bool
	// out is where the response's body goes: the ResponseWriter, or with CompressHTML its
	// encoder behind a buffer (brotli compresses each write on its own).
	out     io.Writer
	in      *bufio.Writer // nil: not compressed
	enc     streamEncoder
	encDone func() // gives enc back
	// held is the response from the first marker on, once one was written (marked), or else
	// the end of the last write that could begin one.
	held   []byte
	marked bool
	linked bool // the client build is in the response
}

// decide is whether the response's writes are read for markers, fixed by its headers and
// status once they are written.
func (w *islandWriter) decide(code int) bool {
	if !w.decided {
		w.decided = true
		w.out = w.ResponseWriter
		h := w.ResponseWriter.Header()
		ct := h.Get("Content-Type")
		// A HEAD, a partial or empty body (http.ServeFile's Range and 304 answers) has no
		// whole document to render islands in.
		whole := w.r.Method != http.MethodHead && code != http.StatusNoContent && code != http.StatusPartialContent && code != http.StatusNotModified
		w.scanning = whole && (ct == "" || strings.HasPrefix(ct, "text/html")) && h.Get("Content-Encoding") == ""
		if outer, ok := w.r.Context().Value(answeredKey{}).(*unanswered); ok && outer.answered {
			w.scanning = false // a page's document: no island to render
		}
		if w.scanning {
			h.Del("Content-Length") // rendered islands change it
			w.compress(code)
		}
	}
	return w.scanning
}

// compress puts an encoder in front of the response, with CompressHTML, when the request
// accepts one of the codings and the response has a body.
func (w *islandWriter) compress(code int) {
	if !w.site.o.CompressHTML {
		return
	}
	h := w.ResponseWriter.Header()
	h.Add("Vary", "Accept-Encoding")
	coding := negotiate(w.r.Header.Get("Accept-Encoding"), liveCodings)
	if coding == "" {
		return
	}
	enc, release, ok := newStreamEncoder(w.r, w.ResponseWriter, coding)
	if !ok {
		return // past the live encoders' bound: uncompressed
	}
	h.Set("Content-Encoding", coding)
	w.enc, w.encDone = enc, release
	w.in = encoderInputs.Get().(*bufio.Writer)
	w.in.Reset(enc)
	w.out = w.in
}

func (w *islandWriter) WriteHeader(code int) {
	if code >= 200 {
		w.decide(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *islandWriter) Write(b []byte) (int, error) {
	if !w.decide(http.StatusOK) {
		return w.ResponseWriter.Write(b)
	}
	if w.marked {
		w.held = append(w.held, b...)
		return len(b), nil
	}
	data, carried := b, len(w.held) > 0
	if carried {
		w.held = append(w.held, b...)
		data = w.held
	}
	pass := len(data)
	if i := bytes.Index(data, islandMark); i >= 0 {
		pass, w.marked = i, true
	} else {
		pass -= markPrefixAtEnd(data)
	}
	if _, err := w.out.Write(data[:pass]); err != nil {
		return 0, err
	}
	if carried {
		w.held = w.held[:copy(w.held, data[pass:])]
	} else {
		w.held = append(w.held[:0], data[pass:]...)
	}
	return len(b), nil
}

// markPrefixAtEnd is how many bytes at the end of b could begin a marker.
func markPrefixAtEnd(b []byte) int {
	for n := min(len(b), len(islandMark)-1); n > 0; n-- {
		if bytes.HasPrefix(islandMark, b[len(b)-n:]) {
			return n
		}
	}
	return 0
}

// release writes what is held, its islands rendered. A marker cut off (the response ended,
// or was flushed, inside it) is dropped at the end, and kept for the next write otherwise.
func (w *islandWriter) release(final bool) {
	if !w.marked {
		if len(w.held) > 0 {
			w.out.Write(w.held)
			w.held = w.held[:0]
		}
		return
	}
	page := w.held
	marked := findIslands(page)
	upTo := len(page)
	from := 0
	if len(marked) > 0 {
		from = marked[len(marked)-1].end
	}
	if cut := bytes.Index(page[from:], islandMark); cut >= 0 {
		upTo = from + cut
		if final {
			w.site.d.log.Warn("an island marker cut off at the end of a response was dropped: its props are not sent",
				"url", w.r.URL.RequestURI())
		}
	}
	htmls, counts := w.site.renderIslands(w.r, marked)
	linkAt := -1
	if !w.linked && len(marked) > 0 {
		linkAt, w.linked = marked[0].start, true
	}
	bp := buffers.Get().(*[]byte)
	doc := w.site.appendIslands((*bp)[:0], page[:upTo], marked, htmls, w.nonce(), counts.clientBuild, linkAt)
	w.out.Write(doc)
	putBuffer(bp, doc)
	rest := len(page) - upTo
	if final {
		rest = 0
	}
	copy(w.held, page[upTo:upTo+rest])
	w.held, w.marked = w.held[:rest], rest > 0
}

// end writes what is held once the handler has returned, and ends its compression.
func (w *islandWriter) end() {
	if !w.scanning {
		return
	}
	w.release(true)
	if w.enc != nil {
		if w.in.Flush() == nil {
			w.enc.Close()
		}
		encoderInputs.Put(w.in)
		w.encDone()
	}
}

// nonce is the response's script nonce: Options.Nonce's for the request, or, when the shop
// sets it in a middleware behind Wrap (a router's), the one its Content-Security-Policy
// header allows scripts by.
func (w *islandWriter) nonce() string {
	if w.site.o.Nonce != nil {
		if n := w.site.o.Nonce(w.r); n != "" {
			return n
		}
	}
	return scriptNonce(w.ResponseWriter.Header().Get("Content-Security-Policy"))
}

// scriptNonce is the nonce a Content-Security-Policy allows scripts by: its script-src's
// (script-src-elem's), else default-src's, or "".
func scriptNonce(policy string) string {
	found := map[string]string{}
	for directive := range strings.SplitSeq(policy, ";") {
		fields := strings.Fields(directive)
		if len(fields) == 0 {
			continue
		}
		for _, v := range fields[1:] {
			if n, ok := strings.CutPrefix(v, "'nonce-"); ok && strings.HasSuffix(n, "'") {
				found[strings.ToLower(fields[0])] = strings.TrimSuffix(n, "'")
				break
			}
		}
	}
	for _, d := range []string{"script-src-elem", "script-src", "default-src"} {
		if n := found[d]; n != "" {
			return n
		}
	}
	return ""
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *islandWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// FlushError writes what is held, its islands rendered, and flushes: a handler that
// flushes wants what it wrote sent.
func (w *islandWriter) FlushError() error {
	if w.decide(http.StatusOK) {
		w.release(false)
		if w.enc != nil {
			if err := w.in.Flush(); err != nil {
				return err
			}
			if err := w.enc.Flush(); err != nil {
				return err
			}
		}
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *islandWriter) Flush() { w.FlushError() }

func (w *islandWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}
