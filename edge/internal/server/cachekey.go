package server

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// keyRule turns a request into the URL the page is rendered for and its cache key: the
// route, the path with its escapes normalized, the query parameters that matter in sorted
// order, and the declared variants. The render gets exactly the normalized URL, and the key
// holds everything else the render request is made of, so two requests share a key only if
// they would send the same render request.
type keyRule struct {
	route    string   // the ServeMux pattern: with a host in it, one path can mean two pages
	query    []string // nil: every parameter but trackingQuery
	variants []string // "header:Name" or "cookie:name", sorted
}

// trackingQuery are the query parameters a page without a Query list does not see (a
// trailing * matches a prefix): tracking, which no page reads.
var trackingQuery = []string{"utm_*", "fbclid", "gclid", "msclkid", "mc_cid", "mc_eid"}

func newKeyRule(r Route) keyRule {
	return keyRule{route: r.Pattern, query: r.Cache.Query, variants: slices.Sorted(slices.Values(r.Variants))}
}

// renderURL is the normalized path and query.
func (k keyRule) renderURL(u *url.URL) string {
	path := canonicalPath(u)
	if u.RawQuery == "" {
		return path
	}
	q := u.Query()
	for name := range q {
		if !k.keeps(name) {
			delete(q, name)
		}
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode() // Encode sorts by name
}

// canonicalPath is the path as the client escaped it, with each segment decoded and escaped
// again the default way: %41 becomes A and a space %20, but an escaped slash stays %2F.
// ServeMux matches wildcards on decoded segments, so /items/7%2Freviews is the item
// "7/reviews", not /items/7/reviews: the two must not share a URL, nor a key.
func canonicalPath(u *url.URL) string {
	segments := strings.Split(u.EscapedPath(), "/")
	for i, s := range segments {
		decoded, err := url.PathUnescape(s)
		if err != nil { // EscapedPath only returns valid escapes; keep it as it is regardless
			continue
		}
		segments[i] = strings.ReplaceAll((&url.URL{Path: decoded}).EscapedPath(), "/", "%2F")
	}
	return strings.Join(segments, "/")
}

func (k keyRule) keeps(name string) bool {
	if k.query != nil {
		return slices.Contains(k.query, name)
	}
	for _, pattern := range trackingQuery {
		if prefix, ok := strings.CutSuffix(pattern, "*"); ok && strings.HasPrefix(name, prefix) || name == pattern {
			return false
		}
	}
	return true
}

// variantValues reads the declared variants from the request. A header is sent trimmed
// and lower-cased, missing or not; a cookie only when the request has it, empty or not.
func (k keyRule) variantValues(r *http.Request) map[string]string {
	if len(k.variants) == 0 {
		return nil
	}
	values := make(map[string]string, len(k.variants))
	for _, v := range k.variants {
		kind, name, _ := strings.Cut(v, ":")
		if kind == "header" {
			values[v] = strings.ToLower(strings.TrimSpace(r.Header.Get(name)))
		} else if c, err := r.Cookie(name); err == nil {
			values[v] = c.Value
		}
	}
	return values
}

// key is the cache key of a render request: build id, route, normalized URL, variants. A
// variant the request lacks is written without "=", so it differs from an empty one.
func (k keyRule) key(buildID, renderURL string, variants map[string]string) string {
	var b strings.Builder
	b.WriteString(buildID)
	b.WriteByte(' ')
	b.WriteString(k.route)
	b.WriteByte(' ')
	b.WriteString(renderURL)
	for _, v := range k.variants { // sorted, so equal requests give equal keys
		b.WriteString("\x00")
		b.WriteString(v)
		if value, ok := variants[v]; ok {
			b.WriteByte('=')
			b.WriteString(value)
		}
	}
	return b.String()
}
