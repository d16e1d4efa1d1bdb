package e2e

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
)

// scrape returns the value of every sample of a Prometheus text page, keyed by the sample's
// name and labels as written.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	r := harness.Get(t, url)
	if r.StatusCode != 200 {
		t.Fatalf("%s: got %d", url, r.StatusCode)
	}
	samples := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(r.Text))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			samples[line[:i]] = v
		}
	}
	return samples
}

// sum adds the samples whose key starts with name and contains every one of labels.
func sum(samples map[string]float64, name string, labels ...string) float64 {
	var total float64
	for k, v := range samples {
		if !strings.HasPrefix(k, name+"{") && k != name {
			continue
		}
		match := true
		for _, l := range labels {
			if !strings.Contains(k, l) {
				match = false
			}
		}
		if match {
			total += v
		}
	}
	return total
}

func TestMetricsMoveOnBothSides(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	renderer := startRenderer(t, socket)
	edge := startEdge(t, socket)
	rendererMetrics := renderer.HTTPURL("/metrics")

	edgeBefore, rendererBefore := scrape(t, edge.admin+"/metrics"), scrape(t, rendererMetrics)
	assertSSR(t, harness.Get(t, edge.url+"/"), 200)
	assertFallback(t, harness.Get(t, edge.url+"/throws"), 200, "render-error")
	edgeAfter, rendererAfter := scrape(t, edge.admin+"/metrics"), scrape(t, rendererMetrics)

	moved := []struct {
		name    string
		samples [2]map[string]float64
		metric  string
		labels  []string
	}{
		{"edge: ssr requests by route", [2]map[string]float64{edgeBefore, edgeAfter}, "edge_requests_total", []string{`route="GET /{$}"`, `outcome="ssr"`, `code="200"`}},
		{"edge: fallbacks by reason", [2]map[string]float64{edgeBefore, edgeAfter}, "edge_requests_total", []string{`route="GET /throws"`, `outcome="render-error"`}},
		{"edge: render latency", [2]map[string]float64{edgeBefore, edgeAfter}, "edge_render_duration_seconds_count", []string{`route="GET /{$}"`, `result="OK"`}},
		{"renderer: render duration by page", [2]map[string]float64{rendererBefore, rendererAfter}, "renderer_render_duration_seconds_count", []string{`page="home"`, `outcome="ok"`}},
		{"renderer: failed renders by code", [2]map[string]float64{rendererBefore, rendererAfter}, "renderer_renders_total", []string{`page="throws"`, `outcome="RENDER_ERR_PAGE_THREW"`}},
	}
	for _, m := range moved {
		if before, after := sum(m.samples[0], m.metric, m.labels...), sum(m.samples[1], m.metric, m.labels...); after <= before {
			t.Errorf("%s: %s%v went from %v to %v, want it to move", m.name, m.metric, m.labels, before, after)
		}
	}
	for _, family := range []string{"edge_renders_in_flight", "go_goroutines", "process_cpu_seconds_total"} {
		if _, ok := edgeAfter[family]; !ok {
			t.Errorf("edge /metrics lacks %s", family)
		}
	}
	for _, family := range []string{"renderer_queue_depth", "renderer_pool_utilization", "renderer_workers", "nodejs_eventloop_lag_seconds"} {
		if _, ok := rendererAfter[family]; !ok {
			t.Errorf("renderer /metrics lacks %s", family)
		}
	}
}

func TestGrpcurl(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	startRenderer(t, socket)
	call := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(grpcurl, append([]string{"-plaintext", "-unix"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("grpcurl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	services := strings.Fields(call(socket, "list"))
	for _, want := range []string{"ssr.v1.RenderService", "grpc.health.v1.Health"} {
		if !strings.Contains(strings.Join(services, " "), want) {
			t.Errorf("grpcurl list: got %v, want %s among them", services, want)
		}
	}
	if out := call(socket, "grpc.health.v1.Health/Check"); !strings.Contains(out, `"SERVING"`) {
		t.Errorf("health check: got %s", out)
	}

	var resp struct {
		HTML   string `json:"html"`
		Status int    `json:"status"`
		Page   string `json:"page"`
	}
	out := call("-d", `{"page": "home", "url": "/"}`, socket, "ssr.v1.RenderService/Render")
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatalf("Render answer is not JSON: %v\n%.500s", err, out)
	}
	html, err := base64.StdEncoding.DecodeString(resp.HTML)
	if err != nil || resp.Status != 200 || resp.Page != "home" || !strings.Contains(string(html), `data-testid="add-to-cart"`) {
		t.Errorf("Render via grpcurl: got status %d page %q, %d bytes of HTML (%v)", resp.Status, resp.Page, len(html), err)
	}
}
