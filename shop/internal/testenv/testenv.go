// Package testenv finds, for the shop's tests, what `make test-shop` builds and installs in
// the repository: the pinned Node and the app's builds.
package testenv

import (
	"encoding/json"
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

// NodeFlags are the flags every launcher gives the renderer's node (renderer/node-flags.json).
func NodeFlags(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot, "renderer", "node-flags.json"))
	var flags []string
	if err == nil {
		err = json.Unmarshal(b, &flags)
	}
	if err != nil {
		t.Fatalf("renderer/node-flags.json: %v", err)
	}
	return flags
}

// Node is the pinned Node the renderer runs on; the test fails when it is not installed.
func Node(t testing.TB) string {
	t.Helper()
	node := filepath.Join(RepoRoot, "renderer", "node_modules", ".bin", "node")
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("%s is missing: run `make test-shop` (it builds the app and installs the pinned Node)", node)
	}
	return node
}
