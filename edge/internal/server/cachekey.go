package server

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
)

// keyRule turns a request into the URL the page is rendered for and its cache key: the
// path with default escaping, the query parameters that matter in sorted order, and the
// declared variants. The render gets exactly the normalized URL, so a stored page can never
// depend on a parameter its key left out.
type keyRule struct {
	query    []string // nil: every parameter not ignored
	ignore   []string // names; a trailing * matches a prefix
	variants []string // "header:Name" or "cookie:name", sorted
}

func newKeyRule(r config.Route, ignore []string) keyRule {
	k := keyRule{query: r.Cache.Query, ignore: ignore, variants: slices.Sorted(slices.Values(r.Variants))}
	return k
}

// renderURL is the normalized path and query.
func (k keyRule) renderURL(u *url.URL) string {
	path := (&url.URL{Path: u.Path}).EscapedPath()
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

func (k keyRule) keeps(name string) bool {
	if k.query != nil {
		return slices.Contains(k.query, name)
	}
	for _, pattern := range k.ignore {
		if prefix, ok := strings.CutSuffix(pattern, "*"); ok && strings.HasPrefix(name, prefix) || name == pattern {
			return false
		}
	}
	return true
}

// variantValues reads the declared variants from the request.
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

// key is the cache key of a render request: build id, normalized URL, variants.
func (k keyRule) key(buildID, renderURL string, variants map[string]string) string {
	var b strings.Builder
	b.WriteString(buildID)
	b.WriteByte(' ')
	b.WriteString(renderURL)
	for _, v := range k.variants { // sorted, so equal requests give equal keys
		b.WriteString("\x00")
		b.WriteString(v)
		b.WriteByte('=')
		b.WriteString(variants[v])
	}
	return b.String()
}
