package ssr

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestDocumentFromGo: the document has the bundle's lang and head tags, then those its Go
// loader decided, and every script element has each response's own CSP nonce: rendered,
// stored and served again, or the client-side-render fallback.
func TestDocumentFromGo(t *testing.T) {
	const noindex = `<meta name="robots" content="noindex">`
	var n atomic.Int64
	nonceOf := func(r *http.Request) string { return r.Header.Get("X-Test-Nonce") }
	fake := productBundle()
	fake.lang, fake.documentHead = "de", `<link rel="icon" href="/favicon.ico">`
	f := newFixtureOn(t, Options{Nonce: nonceOf}, fake)
	h := f.srv.Page("product", PageOptions{
		Cache: CachePolicy{TTL: time.Minute, Query: []string{}},
		Load: func(*http.Request) (Result, error) {
			// A page's own markup that looks like a script must not get the nonce.
			// (The fake renderer writes its props into the page's HTML as they are.)
			return Result{Props: json.RawMessage(`{"html": "<script nonce=\"\">alert(1)</script>", "text": "` +
				strings.Repeat("long enough to be worth compressing ", 100) + `"}`), Head: noindex}, nil
		},
	})
	scripts := regexp.MustCompile(`<script[^>]*>`)
	check := func(t *testing.T, body, nonce string) {
		t.Helper()
		if !strings.Contains(body, `<html lang="de">`) {
			t.Errorf("no lang=de: %.200s", body)
		}
		head, _, _ := strings.Cut(body, "</head>")
		if !strings.Contains(head, `<link rel="icon" href="/favicon.ico">`+"\n"+`<meta name="robots" content="noindex">`) {
			t.Errorf("the bundle's then the loader's head tags are not in the head: %s", head)
		}
		// The build's script and the hydration data's, never one in the page's markup.
		var with []string
		for _, tag := range scripts.FindAllString(body, -1) {
			if strings.Contains(tag, ` nonce="`+nonce+`"`) {
				with = append(with, tag)
			}
		}
		want := []string{`<script nonce="` + nonce + `" type="module" src="/assets/c.js">`,
			`<script nonce="` + nonce + `" id="__SSR_DATA__" type="application/json">`}
		if !slices.Equal(with, want) {
			t.Errorf("got scripts with the nonce %q, want %q", with, want)
		}
	}
	get := func(nonce string, header ...string) *httptest.ResponseRecorder {
		return serve(h, "/products/7", append([]string{"X-Test-Nonce", nonce}, header...)...)
	}
	for i := range 3 { // a render, then hits of the stored copy: each with its own nonce
		nonce := "n" + strconv.Itoa(int(n.Add(1)))
		rec := get(nonce, "Accept-Encoding", "identity")
		if rec.Code != 200 {
			t.Fatalf("request %d: got %d", i, rec.Code)
		}
		check(t, rec.Body.String(), nonce)
		if i > 0 && !strings.Contains(rec.Header().Get("Cache-Status"), "hit") {
			t.Errorf("request %d: got Cache-Status %q, want a hit", i, rec.Header().Get("Cache-Status"))
		}
		if rec.Header().Get("ETag") != "" {
			t.Errorf("an ETag on a document with a nonce: a 304 would keep an older nonce")
		}
	}
	if rec := get("gz", "Accept-Encoding", "gzip"); rec.Header().Get("Content-Encoding") != "gzip" {
		t.Errorf("a stored document with a nonce is not compressed: %v", rec.Header())
	}
	f.renderer.down.Store(true)
	rec := serve(f.srv.Page("product", PageOptions{Load: func(*http.Request) (Result, error) { return Result{Head: noindex}, nil }}),
		"/products/8", "X-Test-Nonce", "fb")
	if rec.Header().Get("X-SSR-Fallback") == "" {
		t.Fatalf("want the fallback, got %v", rec.Header())
	}
	check(t, rec.Body.String(), "fb")
}
