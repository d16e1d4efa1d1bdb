package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBareNodeServesTheEdgesBytes: make bench's bare fastify + Piscina contender
// (bench/node-baseline) answers with the very document the edge writes for the same page,
// so the bench compares servers, not documents.
func TestBareNodeServesTheEdgesBytes(t *testing.T) {
	_, edge := startStack(t)
	port := freePort(t)
	cmd := exec.Command(nodeBinary, filepath.Join(repoRoot, "bench", "node-baseline", "server.mjs"),
		"--port", fmt.Sprint(port), "--threads", "1", "--bundle", fixtureBundle(),
		"--manifest", filepath.Join(assetsDir(), "manifest.json"))
	cmd.Dir = repoRoot
	startProcess(t, "node-baseline", cmd)
	bare := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitUntil(t, 30*time.Second, "bench/node-baseline answers", func() bool {
		resp, err := noRedirects.Get(bare + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})

	for _, path := range []string{"/", "/products/7"} {
		want, got := get(t, edge.url+path), get(t, bare+path)
		if want.Header.Get("X-SSR-Fallback") != "" {
			t.Fatalf("%s: the edge fell back (%s)", path, want.Header.Get("X-SSR-Fallback"))
		}
		if got.StatusCode != want.StatusCode || got.body != want.body {
			i := 0
			for i < min(len(got.body), len(want.body)) && got.body[i] == want.body[i] {
				i++
			}
			t.Errorf("%s: bare Node %d, %d bytes; the edge %d, %d bytes; first difference at byte %d:\nbare: %q\nedge: %q",
				path, got.StatusCode, len(got.body), want.StatusCode, len(want.body), i,
				excerpt(got.body, i), excerpt(want.body, i))
		}
	}
}

func excerpt(s string, at int) string {
	return strings.ToValidUTF8(s[max(0, at-40):min(len(s), at+80)], "?")
}
