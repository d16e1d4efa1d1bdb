package manifests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
)

// TestTracingComponent: the tracing component sends both containers' spans to one
// collector, and each binary's own config check accepts what it is given (the pod's
// ssr.yaml with the container's env), so a typo fails here and not at the pod's start.
func TestTracingComponent(t *testing.T) {
	r := renderWith(t, "prod", "tracing")
	pod := r.pod(t)
	text, _ := r.config(t, pod)
	path := filepath.Join(t.TempDir(), "ssr.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	env := func(c container) (pairs []string) {
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "SSR_") && e.ValueFrom == nil {
				pairs = append(pairs, e.Name+"="+e.Value)
			}
		}
		return pairs
	}

	edge, err := config.Load(path, env(pod.container(t, "edge")))
	if err != nil {
		t.Fatalf("the edge refuses the component's settings: %v", err)
	}
	if edge.Edge.OTLPEndpoint == "" || edge.Edge.TraceSampleRatio <= 0 || edge.Edge.TraceSampleRatio >= 1 {
		t.Errorf("edge: otlp_endpoint %q, trace_sample_ratio %v; want a collector and a ratio below 1", edge.Edge.OTLPEndpoint, edge.Edge.TraceSampleRatio)
	}

	// The renderer's own parser, on the pinned Node, prints the endpoint it would use.
	parse := exec.Command(harness.NodeBinary, "--input-type=module", "-e", `
		import { readFileSync } from 'node:fs';
		import { parseConfig } from `+"'"+filepath.Join(harness.RepoRoot, "renderer", "src", "config.js")+"'"+`;
		process.stdout.write(parseConfig(readFileSync(process.argv[1], 'utf8'), { env: process.env }).otlpEndpoint);
	`, path)
	parse.Env = append(os.Environ(), env(pod.container(t, "renderer"))...)
	out, err := parse.CombinedOutput()
	if err != nil {
		t.Fatalf("the renderer refuses the component's settings: %v\n%s", err, out)
	}
	if string(out) != edge.Edge.OTLPEndpoint {
		t.Errorf("renderer sends spans to %q, the edge to %q: want one collector", out, edge.Edge.OTLPEndpoint)
	}
}
