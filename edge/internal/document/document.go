// Package document writes the HTML document around a rendered page: the edge owns the shell
// (doctype, head, asset tags, hydration data, root element), the renderer only the page.
package document

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"html"
	"iter"
	"math/bits"
)

// Page is what goes into one document.
type Page struct {
	Name   string
	URL    string
	Params map[string]string
	// Lang is the html element's lang; empty: "en".
	Lang string
	// ExtraHead is trusted markup added to the head before the page's own: the bundle's
	// documentHead, then a Go loader's head.
	ExtraHead string
	// ClientBuild is the client build the page's server bundle was built with (its
	// render's client_build_id): the document links it when the Shell knows it. Empty: the
	// current build.
	ClientBuild string
	// Head is trusted markup from the app's head(); HTML the rendered root.
	Head string
	HTML []byte
	// Status, if not zero, is the response's status, for the app's client: a page that comes
	// without its props (a Go loader's failure) is its errorPage, given {"status": Status}.
	Status int
	// PropsJSON is the JSON object the page rendered with, or, with no HTML, the props a Go
	// loader computed for a render that failed: the browser renders from them. Nil with no
	// HTML: the client entry loads its own data.
	PropsJSON []byte
	// Nonce, if not empty, is set on every script element (a Content-Security-Policy
	// nonce). It must be new for each response: a stored document is made without it
	// (AppendTemplate) and gets each response's own (WithNonce).
	Nonce string
	// NoncePlaceholder, if not empty, is what HTML carries where Nonce goes: a streamed
	// body's inline scripts, React's own, hold nonce="<NoncePlaceholder>"
	// (RenderStreamRequest.nonce), each replaced by Nonce, or by a slot in a template.
	NoncePlaceholder string
	// Deferred are the page's deferred values, each written after the root as a JSON data
	// element the client entry reads before it hydrates.
	Deferred []Deferred
}

// Deferred is one deferred value as the browser gets it: its JSON, or the error that took its
// place.
type Deferred struct {
	Name string
	// JSON is the value; nil when Error is set.
	JSON []byte
	// Error is a message safe to show in a browser.
	Error string
}

// dataPrefix is the serialized hydration envelope without its props.
type dataPrefix struct {
	Page   string            `json:"page"`
	URL    string            `json:"url"`
	Params map[string]string `json:"params"`
	Status int               `json:"status,omitempty"`
}

const (
	headOpen = "\">\n<head>\n<meta charset=\"utf-8\">\n" +
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	rootOpen = "</head>\n<body>\n<div id=\"root\">"
	dataOpen = " id=\"__SSR_DATA__\" type=\"application/json\">"
	closing  = "</script>\n</body>\n</html>\n"
)

// Append appends the document for p to dst and returns the extended slice.
//
// Everything inside the data script is JSON with <, >, & and U+2028/U+2029 escaped as \uXXXX,
// so no value can end the script element (</script>), open a comment (<!--) or break a
// JavaScript parser that reads the JSON as a literal.
func (s *Shell) Append(dst []byte, p Page) []byte {
	dst, _ = s.appendDocument(dst, p, false, nil)
	return dst
}

// AppendAround appends the document for p to dst as Append does, except for the page's HTML,
// and returns where that goes, as an offset from the document's start: the document is
// doc[:at], p.HTML, doc[at:], written in three parts without a copy of the page. A page whose
// HTML carries nonce placeholders is appended whole, and at is -1.
func (s *Shell) AppendAround(dst []byte, p Page) (doc []byte, at int) {
	at = -1
	dst, _ = s.appendDocument(dst, p, false, &at)
	return dst, at
}

// AppendTemplate appends the document for p without a nonce and returns, as offsets from
// the document's start, where each script element's nonce goes, for WithNonce.
func (s *Shell) AppendTemplate(dst []byte, p Page) ([]byte, []int) {
	p.Nonce = ""
	return s.appendDocument(dst, p, true, nil)
}

// WithNonce appends doc, made by AppendTemplate with slots, to dst with nonce on every
// script element. Only the shell's own elements get it, never markup of the page's that
// looks like one.
func WithNonce(dst, doc []byte, slots []int, nonce string) []byte {
	for part := range NoncedParts(doc, slots, nonce) {
		dst = append(dst, part...)
	}
	return dst
}

// NoncedParts yields WithNonce's document in parts: slices of doc, with the nonce's
// attribute between them. A stored document is written from where it is stored, so a
// response holds no copy of it.
func NoncedParts(doc []byte, slots []int, nonce string) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		if nonce == "" {
			yield(doc)
			return
		}
		attr := []byte(nonceAttr(nonce))
		last := 0
		for _, at := range slots {
			if !yield(doc[last:at]) || !yield(attr) {
				return
			}
			last = at
		}
		yield(doc[last:])
	}
}

// NoncedLen is the length of WithNonce's document.
func NoncedLen(doc []byte, slots []int, nonce string) int {
	if nonce == "" {
		return len(doc)
	}
	return len(doc) + len(slots)*len(nonceAttr(nonce))
}

func nonceAttr(nonce string) string { return " nonce=\"" + html.EscapeString(nonce) + "\"" }

// AppendNonced appends html, a streamed body or a part of it, to dst with each of its
// placeholder's nonce attributes (Page.NoncePlaceholder) replaced by nonce's, or removed
// when nonce is empty. A part must hold whole attributes: the renderer's messages end
// where React flushes, after a complete instruction.
func AppendNonced(dst, html []byte, placeholder, nonce string) []byte {
	return appendNonced(dst, html, placeholder, nonce, func(int) {})
}

// appendNonced is AppendNonced calling slot with len(dst) where each placeholder was.
func appendNonced(dst, html []byte, placeholder, nonce string, slot func(int)) []byte {
	from := []byte(nonceAttr(placeholder))
	to := ""
	if nonce != "" {
		to = nonceAttr(nonce)
	}
	for {
		i := bytes.Index(html, from)
		if i < 0 {
			return append(dst, html...)
		}
		dst = append(dst, html[:i]...)
		slot(len(dst))
		dst = append(dst, to...)
		html = html[i+len(from):]
	}
}

// appendDocument appends p's document; with slots, it returns where each script element's
// nonce goes; with bodyAt, it leaves out the page's HTML when it can and sets where it goes.
func (s *Shell) appendDocument(dst []byte, p Page, slots bool, bodyAt *int) ([]byte, []int) {
	start := len(dst)
	dst, at := s.appendOpen(dst, p, slots, bodyAt)
	return appendClose(dst, p, scriptOpener(p.Nonce, slots, start, &at)), at
}

// AppendOpenTemplate appends p's document up to the end of the page's HTML, without a nonce,
// and returns where each script element's nonce goes (a placeholder's in p.HTML included), as
// AppendTemplate does: the part of a partially prerendered page that is stored, its prelude
// in the root. AppendClose writes the rest for each response.
func (s *Shell) AppendOpenTemplate(dst []byte, p Page) ([]byte, []int) {
	p.Nonce = ""
	return s.appendOpen(dst, p, true, nil)
}

// AppendClose appends the end of p's document, after the page's HTML: the root element's end,
// p's deferred values and its hydration data, each script with p.Nonce.
func AppendClose(dst []byte, p Page) []byte {
	return appendClose(dst, p, scriptOpener(p.Nonce, false, 0, nil))
}

// scriptOpener appends "<script" and the nonce's attribute; with slots, it adds where the
// nonce goes, from start, to *at.
func scriptOpener(nonce string, slots bool, start int, at *[]int) func([]byte) []byte {
	return func(dst []byte) []byte {
		dst = append(dst, "<script"...)
		if slots {
			*at = append(*at, len(dst)-start)
		}
		if nonce != "" {
			dst = append(dst, nonceAttr(nonce)...)
		}
		return dst
	}
}

// appendOpen appends p's document up to the end of the page's HTML.
func (s *Shell) appendOpen(dst []byte, p Page, slots bool, bodyAt *int) ([]byte, []int) {
	s.checkManifest()
	start := len(dst)
	var at []int
	script := scriptOpener(p.Nonce, slots, start, &at)
	b, _ := s.buildFor(p.ClientBuild)
	dst = append(dst, "<!doctype html>\n<html lang=\""...)
	dst = append(dst, html.EscapeString(cmp.Or(p.Lang, "en"))...)
	dst = append(dst, headOpen...)
	for _, head := range []string{p.ExtraHead, p.Head} {
		if head != "" {
			dst = append(dst, head...)
			dst = append(dst, '\n')
		}
	}
	dst = appendAssets(dst, b, script)
	dst = append(dst, rootOpen...)
	switch {
	case p.NoncePlaceholder == "" && bodyAt != nil:
		*bodyAt = len(dst) - start
	case p.NoncePlaceholder == "":
		dst = append(dst, p.HTML...)
	default:
		dst = appendNonced(dst, p.HTML, p.NoncePlaceholder, p.Nonce, func(i int) {
			if slots {
				at = append(at, i-start)
			}
		})
	}
	return dst, at
}

// appendClose appends the end of p's document, opening each script with script.
func appendClose(dst []byte, p Page, script func([]byte) []byte) []byte {
	dst = append(dst, "</div>\n"...)
	for _, d := range p.Deferred {
		dst = appendDeferred(script(dst), d)
	}
	dst = append(script(dst), dataOpen...)

	// json.Marshal already escapes <, >, &, U+2028 and U+2029 in strings.
	prefix, err := json.Marshal(dataPrefix{Page: p.Name, URL: p.URL, Params: nonNil(p.Params), Status: p.Status})
	if err != nil { // strings, a map of strings and a number always marshal
		panic(err)
	}
	if p.PropsJSON == nil {
		dst = append(dst, prefix...)
	} else {
		dst = append(dst, prefix[:len(prefix)-1]...)
		dst = append(dst, `,"props":`...)
		dst = appendHTMLEscape(dst, p.PropsJSON)
		dst = append(dst, '}')
	}
	return append(dst, closing...)
}

// appendDeferred appends the rest of d's data element, after its "<script" and nonce (a data
// element runs nothing, but a policy checker need not know that). Like the hydration data,
// its JSON cannot end the element or open a comment.
func appendDeferred(dst []byte, d Deferred) []byte {
	dst = append(dst, ` type="application/json" data-ssr-deferred="`...)
	dst = append(dst, html.EscapeString(d.Name)...)
	dst = append(dst, `">`...)
	if d.JSON != nil {
		dst = append(dst, `{"value":`...)
		dst = appendHTMLEscape(dst, d.JSON)
	} else {
		msg, err := json.Marshal(d.Error)
		if err != nil { // a string always marshals
			panic(err)
		}
		dst = append(dst, `{"error":`...)
		dst = append(dst, msg...)
	}
	return append(dst, "}</script>\n"...)
}

// appendHTMLEscape appends src to dst escaped exactly as json.HTMLEscape does. json.HTMLEscape
// tests every byte against four values; props are mostly clean text, so this skips clean runs
// eight bytes at a time and copies each run with one append.
func appendHTMLEscape(dst, src []byte) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := nextSpecial(src, 0); i < len(src); i = nextSpecial(src, i+1) {
		if c := src[i]; c != 0xE2 {
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			start = i + 1
		} else if i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8 { // U+2028, U+2029
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[src[i+2]&0xF])
			start = i + 3
		}
	}
	return append(dst, src[start:]...)
}

// nextSpecial returns the index of the first byte at or after i that is <, >, & or 0xE2 (the
// first byte of U+2028 and U+2029), or len(src).
func nextSpecial(src []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	// zeros flags the zero bytes of x. A borrow can also flag bytes above a zero byte, but
	// never below the first one, so the lowest flag is exact.
	zeros := func(x uint64) uint64 { return (x - ones) &^ x & highs }
	for ; len(src)-i >= 8; i += 8 {
		x := binary.LittleEndian.Uint64(src[i:])
		// x|0x02 is 0x3E exactly for '<' (0x3C) and '>' (0x3E).
		m := zeros((x|0x02*ones)^0x3E*ones) | zeros(x^'&'*ones) | zeros(x^0xE2*ones)
		if m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(src); i++ {
		if c := src[i]; c == '<' || c == '>' || c == '&' || c == 0xE2 {
			return i
		}
	}
	return i
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// AppendAssets appends the stylesheet links and module scripts of client build id (empty,
// or one the Shell does not know: the current one), each script with nonce (if any): what a
// page the Go server writes itself (islands in its own template) puts in its head for the
// client entry that brings its islands to life.
func (s *Shell) AppendAssets(dst []byte, nonce, id string) []byte {
	s.checkManifest()
	b, _ := s.buildFor(id)
	return appendAssets(dst, b, func(dst []byte) []byte {
		dst = append(dst, "<script"...)
		if nonce != "" {
			dst = append(dst, nonceAttr(nonce)...)
		}
		return dst
	})
}

// appendAssets appends b's stylesheet links and module scripts; script opens each script
// element (with its nonce, or a slot for one).
func appendAssets(dst []byte, b *build, script func([]byte) []byte) []byte {
	dst = append(dst, b.styles...)
	for _, src := range b.scripts {
		dst = append(script(dst), " type=\"module\" src=\""...)
		dst = append(dst, src...)
		dst = append(dst, "\"></script>\n"...)
	}
	return dst
}

// AppendIsland appends an island of a page the Go server writes: its root, holding the
// island's server-rendered HTML (none: the browser renders it), and after it the data
// element of its props, a JSON object, which the client entry reads to hydrate or render
// it. Like the hydration data, the props cannot end the element or open a comment; name is
// letters, digits, '_' and '-'.
func AppendIsland(dst []byte, name string, html, propsJSON []byte) []byte {
	dst = append(dst, `<div data-ssr-island="`...)
	dst = append(dst, name...)
	dst = append(dst, `">`...)
	dst = append(dst, html...)
	dst = append(dst, `</div><script type="application/json" data-ssr-island-props>`...)
	dst = appendHTMLEscape(dst, propsJSON)
	return append(dst, "</script>"...)
}
