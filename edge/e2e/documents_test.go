package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
)

// TestBareNodeServesTheEdgesBytes: make bench's bare fastify + Piscina contender
// (bench/node-baseline) answers with the very document the edge writes for the same page,
// the page that streams included, so the bench compares servers, not documents.
func TestBareNodeServesTheEdgesBytes(t *testing.T) {
	_, edge := startStack(t)
	port := harness.FreePort(t)
	cmd := exec.Command(harness.NodeBinary, filepath.Join(harness.RepoRoot, "bench", "node-baseline", "server.mjs"),
		"--port", fmt.Sprint(port), "--threads", "1", "--bundle", fixtureBundle(),
		"--manifest", filepath.Join(assetsDir(), "manifest.json"))
	cmd.Dir = harness.RepoRoot
	harness.Start(t, "node-baseline", cmd)
	bare := fmt.Sprintf("http://127.0.0.1:%d", port)
	poll.Until(t, "bench/node-baseline answers", func() bool {
		resp, err := harness.NoRedirects.Get(bare + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})

	for _, path := range []string{"/", "/products/7", "/products/7/reviews"} {
		want, got := harness.Get(t, edge.url+path), harness.Get(t, bare+path)
		if want.Header.Get("X-SSR-Fallback") != "" {
			t.Fatalf("%s: the edge fell back (%s)", path, want.Header.Get("X-SSR-Fallback"))
		}
		if got.StatusCode != want.StatusCode || got.Text != want.Text {
			i := 0
			for i < min(len(got.Text), len(want.Text)) && got.Text[i] == want.Text[i] {
				i++
			}
			t.Errorf("%s: bare Node %d, %d bytes; the edge %d, %d bytes; first difference at byte %d:\nbare: %q\nedge: %q",
				path, got.StatusCode, len(got.Text), want.StatusCode, len(want.Text), i,
				excerpt(got.Text, i), excerpt(want.Text, i))
		}
	}
}

func excerpt(s string, at int) string {
	return strings.ToValidUTF8(s[max(0, at-40):min(len(s), at+80)], "?")
}
