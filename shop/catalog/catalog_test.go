package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
)

// TestCatalogMatchesTheApp: the catalog the shop seeds, and its reviews, are the ones the demo
// app computes for itself without a Go server (app/src/catalog.js, reviews.js), product for
// product.
func TestCatalogMatchesTheApp(t *testing.T) {
	ids := []int{1, 2, 3, 42, 500, 999, 1000}
	script := fmt.Sprintf(`const c = await import(%q);
const r = await import(%q);
const ids = %s;
console.log(JSON.stringify({products: ids.map(c.getProduct), related: ids.map((id) => c.relatedProducts(id, 8).map((p) => p.id)),
  reviews: ids.map((id) => r.reviewsOf({id}))}));`,
		filepath.Join(harness.RepoRoot, "app", "src", "catalog.js"), filepath.Join(harness.RepoRoot, "app", "src", "reviews.js"), mustJSON(ids))
	if err := harness.Check(harness.NodeBinary); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(harness.NodeBinary, "--input-type=module", "-e", script).Output()
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		Products []json.RawMessage
		Related  [][]int
		Reviews  []json.RawMessage
	}
	if err := json.Unmarshal(out, &js); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if got := mustJSON(Generate(id)); got != string(js.Products[i]) {
			t.Errorf("product %d:\n  Go %s\n  JS %s", id, got, js.Products[i])
		}
		if got := RelatedIDs(id, 8); mustJSON(got) != mustJSON(js.Related[i]) {
			t.Errorf("related to %d: Go %v, JS %v", id, got, js.Related[i])
		}
		if got := mustJSON(Reviews(id)); got != string(js.Reviews[i]) {
			t.Errorf("reviews of %d:\n  Go %s\n  JS %s", id, got, js.Reviews[i])
		}
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestStoreSeedsOnce(t *testing.T) {
	db := filepath.Join(t.TempDir(), "shop.db")
	for range 2 {
		s, err := Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		s.DB().QueryRow("SELECT count(*) FROM products").Scan(&n)
		s.Close()
		if n != MaxID {
			t.Fatalf("%d products, want %d", n, MaxID)
		}
	}
}

// BenchmarkListingProps is the shop's data work per uncached listing render: the query and
// the JSON the props cross the hop as (make bench's shop-uncached row includes it).
func BenchmarkListingProps(b *testing.B) {
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "shop.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.Run("query", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Listing(context.Background(), 1); err != nil {
				b.Fatal(err)
			}
		}
	})
	products, _ := s.Listing(context.Background(), 1)
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		var n int
		for b.Loop() {
			out, err := json.Marshal(ListingProps{Page: 1, PageCount: PageCount, Products: products})
			if err != nil {
				b.Fatal(err)
			}
			n = len(out)
		}
		b.ReportMetric(float64(n), "bytes")
	})
}

// FuzzParseTags holds the tags column's fast path to encoding/json: the same tags for every
// array json.Unmarshal reads, an error wherever it gives one.
func FuzzParseTags(f *testing.F) {
	for _, seed := range []string{`[]`, `["new"]`, `["limited","gift","new"]`, `[""]`, `["a","","b"]`, `["a", "b"]`,
		`["a\"b"]`, `["\u00e9"]`, "[\"\xff\"]", "[\"a\tb\"]", `["a]","b"]`, `["a"`, `null`, `["a"]]`, `[1]`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var want []string
		wantErr := json.Unmarshal([]byte(text), &want)
		got, err := parseTags(text)
		if (err != nil) != (wantErr != nil) || (err == nil && !slices.Equal(got, want)) {
			t.Fatalf("parseTags(%q) = %q, %v; encoding/json: %q, %v", text, got, err, want, wantErr)
		}
	})
}
