package e2e

import (
	"debug/buildinfo"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
)

// TestTestClockOnlyInTheTestBuild: the clock these tests move (package clock, build tag
// testclock) is in their own build of the edge and in no other. The edge `make build`
// writes, as the image builds it, keeps real time and has no endpoint to move it.
func TestTestClockOnlyInTheTestBuild(t *testing.T) {
	production := filepath.Join(harness.RepoRoot, "bin", "edge")
	if err := harness.Check(production); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		binary string
		want   bool
	}{{edgeBinary, true}, {production, false}} {
		info, err := buildinfo.ReadFile(tt.binary)
		if err != nil {
			t.Fatal(err)
		}
		tags := ""
		for _, s := range info.Settings {
			if s.Key == "-tags" {
				tags = s.Value
			}
		}
		if got := strings.Contains(","+tags+",", ",testclock,"); got != tt.want {
			t.Errorf("%s: built with tags %q, the test clock in it: %v, want %v", tt.binary, tags, got, tt.want)
		}
	}

	edge := startEdgeBinary(t, production, filepath.Join(t.TempDir(), "renderer.sock"))
	resp, err := http.Post(edge.admin+"/testclock/advance?by=1h", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /testclock/advance on the production build: got %d, want 404", resp.StatusCode)
	}
}
