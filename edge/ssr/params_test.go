package ssr

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestPathValuesWithoutRoute: a page mounted on a ServeMux gets the path values of the
// pattern it is mounted at, without PageOptions.Route repeating that pattern.
func TestPathValuesWithoutRoute(t *testing.T) {
	load := func(r *http.Request) (Result, error) {
		return Result{Props: map[string]string{"seen": r.PathValue("id")}}, nil
	}
	tests := []struct {
		name       string
		pattern    string
		options    PageOptions
		target     string
		wantParams string
	}{
		{"loader", "GET /p/{id}", PageOptions{Load: load}, "/p/7", `"params":{"id":"7"}`},
		{"the page's own load", "GET /p/{id}", PageOptions{}, "/p/7", `"params":{"id":"7"}`},
		{"cached", "GET /p/{id}", PageOptions{Load: load, Cache: CachePolicy{TTL: time.Minute, Query: []string{}}}, "/p/7", `"params":{"id":"7"}`},
		{"a route that is not the pattern", "GET /p/{id}", PageOptions{Route: "params-page"}, "/p/7", `"params":{"id":"7"}`},
		{"two wildcards", "GET /shops/{shop}/items/{item}", PageOptions{}, "/shops/s1/items/i2", `"params":{"item":"i2","shop":"s1"}`},
		{"rest of the path", "GET /files/{path...}", PageOptions{}, "/files/a/b%20c", `"params":{"path":"a/b c"}`},
		{"host and method", "GET example.com/p/{id}", PageOptions{}, "http://example.com/p/7", `"params":{"id":"7"}`},
		{"no wildcard", "GET /about", PageOptions{}, "/about", `"params":{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			mux := http.NewServeMux()
			mux.Handle(tt.pattern, f.srv.Page("params", tt.options))
			// Twice: a cached page must answer its hit with the same params.
			for range 2 {
				rec := httptest.NewRecorder()
				mux.ServeHTTP(rec, httptest.NewRequest("GET", tt.target, nil))
				if data := hydrationData(rec.Body.String()); rec.Code != 200 || !strings.Contains(data, tt.wantParams) {
					t.Fatalf("got %d %s, want 200 and %s", rec.Code, data, tt.wantParams)
				}
			}
		})
	}
}

// TestPathValuesOfTwoPaths: params come from the path, which the cache key holds, so two
// paths of one pattern never share a stored document.
func TestPathValuesOfTwoPaths(t *testing.T) {
	f := newFixture(t, Options{})
	mux := http.NewServeMux()
	mux.Handle("GET /p/{id}", f.srv.Page("params", PageOptions{Cache: CachePolicy{TTL: time.Minute, Query: []string{}}}))
	for _, id := range []string{"7", "8", "7"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", "/p/"+id, nil))
		if data, want := hydrationData(rec.Body.String()), `"params":{"id":"`+id+`"}`; !strings.Contains(data, want) {
			t.Errorf("/p/%s: got %s, want %s", id, data, want)
		}
	}
	if n := f.renderer.calls.Load(); n != 2 {
		t.Errorf("got %d renders for /p/7, /p/8, /p/7, want 2", n)
	}
}

// hydrationData is the document's __SSR_DATA__ script, or the whole body when it has none.
func hydrationData(body string) string {
	_, data, ok := strings.Cut(body, `<script id="__SSR_DATA__" type="application/json">`)
	if !ok {
		return body
	}
	data, _, _ = strings.Cut(data, "</script>")
	return data
}

// TestOneHandlerTwoPatterns: one cached handler mounted at two patterns that name the same
// path's wildcard differently renders each its own params: they never share a cache entry.
func TestOneHandlerTwoPatterns(t *testing.T) {
	f := newFixture(t, Options{})
	h := f.srv.Page("params", PageOptions{Cache: CachePolicy{TTL: time.Minute, Query: []string{}}})
	mux := http.NewServeMux()
	mux.Handle("GET a.example/p/{id}", h)
	mux.Handle("GET b.example/p/{slug}", h)
	for _, tt := range []struct{ target, want string }{
		{"http://a.example/p/7", `"params":{"id":"7"}`},
		{"http://b.example/p/7", `"params":{"slug":"7"}`},
	} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", tt.target, nil))
		if data := hydrationData(rec.Body.String()); !strings.Contains(data, tt.want) {
			t.Errorf("%s: got %s, want %s", tt.target, data, tt.want)
		}
	}
}
