package manifests

import (
	"strings"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
)

// TestTracingComponent: the tracing component sends both containers' spans to one
// collector, and each binary's own config check accepts what it is given (the pod's
// ssr.yaml with the container's env), so a typo fails here and not at the pod's start.
func TestTracingComponent(t *testing.T) {
	r := renderWith(t, "prod", "tracing")
	pod := r.pod(t)
	env := func(c container) map[string]string {
		vars := map[string]string{}
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "SSR_") && e.ValueFrom == nil {
				vars[e.Name] = e.Value
			}
		}
		return vars
	}

	var edgeEnv []string
	for name, value := range env(pod.container(t, "edge")) {
		edgeEnv = append(edgeEnv, name+"="+value)
	}
	edge := podConfig(t, r, pod, edgeEnv...).Edge
	if edge.OTLPEndpoint == "" || edge.TraceSampleRatio <= 0 || edge.TraceSampleRatio >= 1 {
		t.Errorf("edge: otlp_endpoint %q, trace_sample_ratio %v; want a collector and a ratio below 1", edge.OTLPEndpoint, edge.TraceSampleRatio)
	}

	text, _ := r.config(t, pod)
	renderer := harness.ParseRendererConfigs(t, []harness.RendererConfig{{Text: text, Env: env(pod.container(t, "renderer"))}})[0]
	if renderer.Problem != "" {
		t.Fatalf("the renderer refuses the component's settings: %s", renderer.Problem)
	}
	if got := renderer.Config["otlpEndpoint"]; got != edge.OTLPEndpoint {
		t.Errorf("renderer sends spans to %q, the edge to %q: want one collector", got, edge.OTLPEndpoint)
	}
}
