package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/shop/catalog"
)

// TestAPIServesWhatThePagesRenderWith: the catalog's JSON endpoints (for front ends of
// another kind) answer with the values the shop's React pages get as props, read from the
// same SQLite; a product that does not exist, or an id that is not canonical, is a 404.
func TestAPIServesWhatThePagesRenderWith(t *testing.T) {
	dir := t.TempDir()
	renderer, _ := startRenderer(t, dir)
	shop := startShop(t, renderer, renamedInSQLite(t, dir), "-reviews-delay", "0s")
	compact := func(b []byte) string {
		var out bytes.Buffer
		if err := json.Compact(&out, b); err != nil {
			t.Fatalf("not JSON: %v: %s", err, b)
		}
		return out.String()
	}
	for _, c := range []struct{ page, api string }{
		{"/?page=2", "/api/listing?page=2"},
		{"/products/7", "/api/products/7"},
	} {
		p := get(t, shop+c.page)
		r := harness.Get(t, shop+c.api)
		if r.StatusCode != 200 || r.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s: %d, %q", c.api, r.StatusCode, r.Header.Get("Content-Type"))
		}
		if got, want := compact([]byte(r.Text)), compact(p.props); got != want {
			t.Errorf("GET %s is not %s's props:\n got %.200s\nwant %.200s", c.api, c.page, got, want)
		}
	}
	var reviews []catalog.Review
	if r := harness.Get(t, shop+"/api/products/7/reviews"); r.StatusCode != 200 || json.Unmarshal([]byte(r.Text), &reviews) != nil || len(reviews) != len(catalog.Reviews(7)) {
		t.Errorf("GET /api/products/7/reviews: %d %.200s", r.StatusCode, r.Text)
	}
	for _, path := range []string{"/api/products/1001", "/api/products/007", "/api/products/abc/reviews"} {
		if r := harness.Get(t, shop+path); r.StatusCode != 404 || r.Text != `{"error":"not found"}`+"\n" {
			t.Errorf("GET %s: %d %q, want 404", path, r.StatusCode, r.Text)
		}
	}
}
