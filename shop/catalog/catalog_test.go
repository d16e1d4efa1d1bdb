package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

var repoRoot = func() string { wd, _ := os.Getwd(); return filepath.Dir(filepath.Dir(wd)) }()

// TestCatalogMatchesTheApp: the catalog the shop seeds is the one the demo app computes for
// itself without a Go server (app/src/catalog.js), product for product.
func TestCatalogMatchesTheApp(t *testing.T) {
	ids := []int{1, 2, 3, 42, 500, 999, 1000}
	script := fmt.Sprintf(`const c = await import(%q);
const ids = %s;
console.log(JSON.stringify({products: ids.map(c.getProduct), related: ids.map((id) => c.relatedProducts(id, 8).map((p) => p.id))}));`,
		filepath.Join(repoRoot, "app", "src", "catalog.js"), mustJSON(ids))
	out, err := exec.Command(node(t), "--input-type=module", "-e", script).Output()
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		Products []json.RawMessage
		Related  [][]int
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

func node(t *testing.T) string {
	t.Helper()
	node := filepath.Join(repoRoot, "renderer", "node_modules", ".bin", "node")
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("%s is missing: run `make test-shop` (it installs the pinned Node)", node)
	}
	return node
}
