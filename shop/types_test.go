package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenamedFieldFailsTheTypecheck runs make test's typecheck step (make test-types) in a
// scratch copy of the repository in which a field of a page's Go props type, or of a
// deferred value's, is renamed (the Go still compiles): it fails, naming the field where
// the page reads it.
func TestRenamedFieldFailsTheTypecheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		renames map[string][]string // file → old, new, old, new...
		want    []string            // in the failure (the unchanged tree passes: make lint)
	}{
		{
			name:    "productProps.Related",
			renames: map[string][]string{"shop/main.go": {"Related", "Similar", `"related"`, `"similar"`}},
			want:    []string{"app/src/pages/Product.jsx(", "Property 'related' does not exist on type 'ProductProps'"},
		},
		{
			name: "catalog.Product.PriceCents",
			renames: map[string][]string{
				"shop/catalog/catalog.go": {"PriceCents", "TotalCents", `"priceCents"`, `"totalCents"`},
				"shop/catalog/store.go":   {"PriceCents", "TotalCents"},
				"shop/about.go":           {"PriceCents", "TotalCents"},
			},
			want: []string{"app/src/components/ProductCard.jsx(", "Property 'priceCents' does not exist on type 'Product'"},
		},
		{
			// The reviews page's deferred value (ssr.Defer), not a prop.
			name:    "catalog.Review.Stars",
			renames: map[string][]string{"shop/catalog/catalog.go": {"Stars", "Score", `"stars"`, `"score"`}},
			want:    []string{"app/src/pages/ProductReviews.jsx(", "Property 'stars' does not exist on type 'Review'"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := scratchCopy(t)
			for file, pairs := range tc.renames {
				source := readFile(t, filepath.Join(root, file))
				for i := 0; i < len(pairs); i += 2 {
					if !strings.Contains(source, pairs[i]) {
						t.Fatalf("%s does not say %s", file, pairs[i])
					}
					source = strings.ReplaceAll(source, pairs[i], pairs[i+1])
				}
				publish(t, filepath.Join(root, file), source)
			}
			// The copy's node_modules are links to the real ones: make must never install
			// into them.
			cmd := exec.Command("make", "--no-print-directory",
				"-o", "renderer/node_modules/.package-lock.json", "-o", "app/node_modules/.package-lock.json", "test-types")
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("make test-types passed with the field renamed:\n%s", out)
			}
			for _, want := range tc.want {
				if !strings.Contains(string(out), want) {
					t.Errorf("make test-types failed without saying %q:\n%s", want, out)
				}
			}
		})
	}
}

// scratchCopy copies what make test-types needs into a temp dir: the Makefile, the Go
// modules, the app's sources, the renderer's client (the app imports it) and the jsconfig
// base the app's extends, and renderer/package.json (the Makefile reads its pinned Node);
// the npm packages are links to the real ones.
func scratchCopy(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, dir := range []string{"edge", "shop", "app/src", "renderer/client", "renderer/src"} {
		if err := os.CopyFS(filepath.Join(root, dir), os.DirFS(filepath.Join(repoRoot, dir))); err != nil {
			t.Fatal(err)
		}
	}
	for _, file := range []string{"Makefile", "app/jsconfig.json", "app/package-lock.json", "renderer/package-lock.json",
		"renderer/jsconfig.base.json", "renderer/package.json"} {
		copyFile(t, filepath.Join(repoRoot, file), filepath.Join(root, file))
	}
	for _, link := range []string{"app/node_modules", "renderer/node_modules"} {
		if err := os.Symlink(filepath.Join(repoRoot, link), filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
