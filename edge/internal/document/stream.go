package document

import "bytes"

// Split returns p's document in two parts, for a page whose body is streamed between them:
// everything before the root element's content, and everything after it. p.HTML is ignored.
func (s *Shell) Split(p Page) (open, closing []byte) {
	p.HTML = nil
	doc := s.Append(nil, p)
	// The last one: the shell's own. The page's head is trusted markup and may hold anything,
	// but nothing after the root is unescaped.
	at := bytes.LastIndex(doc, []byte(rootOpen)) + len(rootOpen)
	return doc[:at:at], doc[at:]
}

// abortPending switches every Suspense boundary still pending to client rendering: what
// React's own abort instruction ($RX) does, for every boundary at once. A pending boundary is
// a "$?" comment before a template whose id React gives the "B:" prefix; "$!" makes
// hydration render it in the browser, and _reactRetry wakes a hydration already waiting on it.
// The empty digest is React's own mark of a boundary handed to the browser on purpose: any
// other (none included) is reported as a recoverable error, a console error in most apps.
const abortPending = `for(const t of document.querySelectorAll('template[id^="B:"]')){const c=t.previousSibling;` +
	`if(c&&c.nodeType===8&&c.data==="$?"){c.data="$!";t.dataset.dgst="";if(c._reactRetry)c._reactRetry()}}`

// AbortPending is the script element, with nonce if not empty, that a streamed document
// ends with when its render has not completed.
func AbortPending(nonce string) []byte {
	b := []byte("<script")
	if nonce != "" {
		b = append(b, nonceAttr(nonce)...)
	}
	b = append(b, '>')
	b = append(b, abortPending...)
	return append(b, "</script>"...)
}
