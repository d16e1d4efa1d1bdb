// Package testenv finds, for the shop's tests, what `make test-shop` builds and installs in
// the repository: the pinned Node and the app's builds.
package testenv

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// RepoRoot is the repository's root directory.
var RepoRoot = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}()

// Node is the pinned Node the renderer runs on; the test fails when it is not installed.
func Node(t testing.TB) string {
	t.Helper()
	node := filepath.Join(RepoRoot, "renderer", "node_modules", ".bin", "node")
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("%s is missing: run `make test-shop` (it builds the app and installs the pinned Node)", node)
	}
	return node
}
