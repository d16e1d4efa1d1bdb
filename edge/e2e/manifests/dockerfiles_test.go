package manifests

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
)

// imageRoot is where both images put the repository's files (the Dockerfiles mirror the
// repository layout under it); the tests map it back to the checkout.
const imageRoot = "/app"

// imageEntrypoints are the ENTRYPOINTs of the root Dockerfile's targets, named like the
// containers; TestManifestDockerfiles holds them to the file.
func imageEntrypoints(t *testing.T) map[string][]string {
	return map[string][]string{
		"edge":     {"/app/bin/edge"},
		"renderer": append(append([]string{"node"}, harness.NodeFlags(t)...), "/app/renderer/src/main.js"),
	}
}

// TestManifestDockerfiles holds imageEntrypoints to the Dockerfiles, and checks that what
// they COPY from the build context (the repository root) exists and is not in .dockerignore.
// No container engine runs here: the images themselves are not built.
func TestManifestDockerfiles(t *testing.T) {
	ignore, err := os.ReadFile(filepath.Join(harness.RepoRoot, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var ignored []string
	for _, line := range strings.Split(string(ignore), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			ignored = append(ignored, line)
		}
	}
	dockerfile, err := os.ReadFile(filepath.Join(harness.RepoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^COPY\s+(.+)$`).FindAllStringSubmatch(string(dockerfile), -1) {
		fields := strings.Fields(m[1])
		if strings.HasPrefix(fields[0], "--from=") {
			continue
		}
		for _, src := range fields[:len(fields)-1] {
			if _, err := os.Stat(filepath.Join(harness.RepoRoot, src)); err != nil {
				t.Errorf("Dockerfile: COPY %s: not in the repository", src)
			}
			for _, pattern := range ignored {
				for p := filepath.Clean(src); p != "."; p = filepath.Dir(p) {
					if ok, _ := filepath.Match(strings.TrimPrefix(pattern, "**/"), p); ok || pattern == p {
						t.Errorf("Dockerfile: COPY %s: excluded by .dockerignore %q", src, pattern)
					}
					if ok, _ := filepath.Match(strings.TrimPrefix(pattern, "**/"), filepath.Base(p)); ok && strings.HasPrefix(pattern, "**/") {
						t.Errorf("Dockerfile: COPY %s: excluded by .dockerignore %q", src, pattern)
					}
				}
			}
		}
	}
	// Each target's stage runs from its FROM ... AS <name> to the next FROM.
	stages := map[string]string{}
	for _, stage := range regexp.MustCompile(`(?m)^FROM `).Split(string(dockerfile), -1)[1:] {
		if m := regexp.MustCompile(`^\S+\s+AS\s+(\S+)`).FindStringSubmatch(stage); m != nil {
			stages[m[1]] = stage
		}
	}
	for name, want := range imageEntrypoints(t) {
		text, ok := stages[name]
		if !ok {
			t.Errorf("Dockerfile: no target %q", name)
			continue
		}
		m := regexp.MustCompile(`(?m)^ENTRYPOINT\s+(\[.*\])\s*$`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("Dockerfile target %s: no ENTRYPOINT in exec form", name)
		}
		var got []string
		if err := yaml.Unmarshal([]byte(m[1]), &got); err != nil || !slices.Equal(got, want) {
			t.Errorf("Dockerfile target %s: ENTRYPOINT %s, want %q (the test runs the binaries as the images would)", name, m[1], want)
		}
	}
}
