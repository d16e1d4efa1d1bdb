package server

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
)

// keyMux routes like the edge (one wildcard, two, a {rest...}, an exact root with a query
// list, variants, the catch-all) and answers each request with its cache key and the render
// request it would send, instead of rendering.
func keyMux() http.Handler {
	o := &Options{}
	routes := []Route{
		{Pattern: "GET /items/{id}", Page: "item", Variants: []string{"cookie:currency", "header:Accept-Language"}},
		{Pattern: "GET /items/{id}/reviews", Page: "reviews"},
		{Pattern: "GET /a/{x}/b/{y}", Page: "ab"},
		{Pattern: "GET /files/{rest...}", Page: "files", Variants: []string{"cookie:currency"}},
		{Pattern: "GET /{$}", Page: "home", Cache: CachePolicy{Query: []string{"page"}}},
	}
	mux := http.NewServeMux()
	add := func(p *page) {
		mux.HandleFunc(p.route, func(w http.ResponseWriter, r *http.Request) {
			req := p.request(r)
			if !validUTF8(req) {
				return // answered 400
			}
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
			if err != nil {
				panic(err)
			}
			w.Header().Set("X-Key", p.keys.key("b", req.Url, req.Variants))
			w.Header().Set("X-Request", fmt.Sprintf("%x", b))
		})
	}
	for _, r := range routes {
		add(newPage(r, o, deps{}))
	}
	notFound := newPage(Route{Pattern: notFoundRoute, Page: "not-found"}, o, deps{})
	notFound.unmatched = true
	add(notFound)
	return mux
}

// spellings are ways a client may write target: as given, with its slashes escaped, with
// unreserved characters escaped in upper or lower case, decoded, its query reversed.
func spellings(target string) []string {
	path, query, hasQuery := strings.Cut(target, "?")
	escape := func(lower bool) string {
		var b strings.Builder
		for i := range len(path) {
			c := path[i]
			if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
				s := fmt.Sprintf("%%%02X", c)
				if lower {
					s = strings.ToLower(s)
				}
				b.WriteString(s)
				continue
			}
			b.WriteByte(c)
		}
		return b.String()
	}
	paths := []string{path, escape(false), escape(true)}
	if rest, ok := strings.CutPrefix(path, "/"); ok {
		paths = append(paths, "/"+strings.ReplaceAll(rest, "/", "%2F"), "/"+strings.ReplaceAll(rest, "/", "%2f"))
	}
	if decoded, err := unescapeAll(path); err == nil {
		paths = append(paths, decoded)
	}
	queries := []string{""}
	if hasQuery {
		parts := strings.Split(query, "&")
		queries = []string{"?" + query}
		slices.Reverse(parts)
		queries = append(queries, "?"+strings.Join(parts, "&"))
	}
	var out []string
	for _, p := range paths {
		for _, q := range queries {
			out = append(out, p+q)
		}
	}
	return out
}

func unescapeAll(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		var c byte
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "", fmt.Errorf("bad escape")
		}
		fmt.Sscanf(s[i+1:i+3], "%02x", &c)
		b.WriteByte(c)
		i += 2
	}
	return b.String(), nil
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// keyed is one request's cache key and render request, as keyMux answers it.
type keyed struct{ target, key, request string }

func serveKeyed(mux http.Handler, target string, headers string) (keyed, bool) {
	raw := "GET " + target + " HTTP/1.1\r\nHost: shop.example\r\n" + headers + "\r\n"
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		return keyed{}, false // the server answers 400 before any handler
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, r)
	key := rec.Header().Get("X-Key")
	if key == "" {
		return keyed{}, false // redirected (dot segments, double slashes) or refused by the mux
	}
	return keyed{target, key, rec.Header().Get("X-Request")}, true
}

// FuzzCacheKey holds the invariant that keeps one client's request from poisoning
// another's: two requests with the same cache key send the same render request. It also
// holds that the key is a function of the request (no panic, same answer twice).
func FuzzCacheKey(f *testing.F) {
	for _, seed := range []struct{ target, cookie, lang string }{
		{"/items/7", "EUR", "de"},
		{"/items/7%2Freviews", "", ""},
		{"/items/7/reviews", "-", "en"},
		{"/a/1%2Fb/b/2", "USD", ""},
		{"/a/1/b/2%2F3", "", "fr"},
		{"/files/x%2Fy/z", "", ""},
		{"/files/x/y%2Fz", "-", ""},
		{"/files/./a/../b", "", ""},
		{"/?page=2&b=1&page=1", "", ""},
		{"/?utm_source=x&page=3", "", ""},
		{"/items/%41%62?x=1&a=2", "", "  DE "},
		{"/items/caf%c3%a9", "", ""},
		{"/nowhere/%2e%2e/items/1", "", ""},
		{"/items/a%252Fb", "", ""},
	} {
		f.Add(seed.target, seed.cookie, seed.lang)
	}
	mux := keyMux()
	f.Fuzz(func(t *testing.T, target, cookie, lang string) {
		if !strings.HasPrefix(target, "/") || strings.ContainsAny(target+cookie+lang, "\r\n\x00 \t#") {
			t.Skip()
		}
		// cookie "-" stands for a request without the cookie; anything else is its value.
		var headers []string
		if cookie != "-" {
			headers = append(headers, "Cookie: currency="+cookie+"\r\n")
		}
		headers = append(headers, "")
		var seen []keyed
		for _, h := range headers {
			h += "Accept-Language: " + lang + "\r\n"
			for _, s := range spellings(target) {
				k, ok := serveKeyed(mux, s, h)
				if !ok {
					continue
				}
				if again, _ := serveKeyed(mux, s, h); again != k {
					t.Fatalf("%q: two answers for one request: %+v and %+v", s, k, again)
				}
				for _, other := range seen {
					if other.key == k.key && other.request != k.request {
						t.Fatalf("one key %q for two render requests:\n  %q → %s\n  %q → %s", k.key, other.target, other.request, k.target, k.request)
					}
				}
				seen = append(seen, k)
			}
		}
	})
}

// FuzzAcceptEncoding: whatever a client sends, the coding chosen is one that was offered.
func FuzzAcceptEncoding(f *testing.F) {
	for _, seed := range []string{"", "gzip, br", "br;q=0, gzip", "*", "*;q=0, identity", "GZIP;q=0.5,br;q=abc", ";;,,q=", "br;q=1e400"} {
		f.Add(seed, `"abc"`)
	}
	f.Add("gzip", `W/"abc", "def"`)
	f.Fuzz(func(t *testing.T, acceptEncoding, ifNoneMatch string) {
		for _, offered := range [][]string{storedCodings, liveCodings, nil} {
			if coding := negotiate(acceptEncoding, offered); coding != "" && !slices.Contains(offered, coding) {
				t.Fatalf("negotiate(%q, %v) = %q, which was not offered", acceptEncoding, offered, coding)
			}
		}
		etagMatches(ifNoneMatch, `"abc"`)
	})
}
