package e2e

// The operators' documents held to what runs: the Grafana dashboard (deploy/grafana/) and the
// runbook (docs/operations.md) name metrics, labels, endpoints, log lines, error codes, config
// keys and panels, and each of those names is checked here against a running stack or the
// code that defines it, so neither document can drift from the processes it describes.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache/redistest"
)

const (
	dashboardFile = "deploy/grafana/sidecar-ssr.json"
	runbookFile   = "docs/operations.md"
)

// TestDashboardAndRunbookQueryTheStack runs a stack, makes it expose every series the
// documents query, and checks each PromQL query of the dashboard (panels and variables) and
// each code span and block of the runbook: every metric must be on the /metrics of the
// process it belongs to, every label the query selects or groups by on one of its samples,
// and every request to an admin or debug listener must answer.
func TestDashboardAndRunbookQueryTheStack(t *testing.T) {
	snapshots := t.TempDir()
	socket := filepath.Join(t.TempDir(), "renderer.sock")
	g, gateEnv := startGates(t)
	renderer := startRenderer(t, socket, "SSR_RENDERER_DEBUG_LISTEN=127.0.0.1:0", "SSR_RENDERER_HEAP_SNAPSHOT_DIR="+snapshots,
		// Every render measured for renderer_page_heap_growth_bytes: by default one in 100
		// per worker is, and this test renders a few dozen pages.
		"SSR_RENDERER_HEAP_GROWTH_SAMPLE_EVERY=1", gateEnv)
	// With the shared store, whose metrics the runbook queries too.
	edge := startEdge(t, socket, "SSR_EDGE_SHARED_CACHE_ADDRESS="+redistest.Start(t))
	exposeEverySeries(t, renderer, edge, g)
	stack := stackMetrics{
		"edge":     metricFamilies(scrape(t, edge.admin+"/metrics")),
		"renderer": metricFamilies(scrape(t, renderer.HTTPURL("/metrics"))),
	}
	// What only a Go server of the package's own has (islands in its templates: the edge
	// binary has no templates) counts as the edge's too.
	for name, labels := range metricFamilies(scrape(t, islandMetrics(t, socket))) {
		if _, ok := stack["edge"][name]; !ok {
			stack["edge"][name] = labels
		}
	}

	t.Run("dashboard", func(t *testing.T) {
		for _, q := range readDashboard(t).queries() {
			for _, problem := range stack.problems(q.expr) {
				t.Errorf("%s: %s\n\t%s", q.where, problem, q.expr)
			}
		}
	})

	runbook := readRunbook(t)
	t.Run("runbook metrics", func(t *testing.T) {
		for _, c := range runbook.commands {
			for _, problem := range stack.problems(c.text) {
				t.Errorf("%s:%d: %s\n\t%s", runbookFile, c.line, problem, c.text)
			}
		}
	})

	t.Run("runbook requests", func(t *testing.T) {
		listeners := map[string]string{
			"9100": edge.admin,
			"9101": "http://" + renderer.Address("http"),
			"9102": "http://" + renderer.Address("debug"),
		}
		tried := map[string]bool{}
		for _, c := range runbook.commands {
			for _, m := range localURL.FindAllStringSubmatch(c.text, -1) {
				port, path := m[1], m[2]
				if port == publicPort || path == "" {
					continue // the app's pages, or a port-forward target
				}
				base, ok := listeners[port]
				if !ok {
					t.Errorf("%s:%d: localhost:%s is no listener's default port (edge admin 9100, renderer 9101, renderer debug 9102, public 8080)", runbookFile, c.line, port)
					continue
				}
				method := http.MethodGet
				if postFlag.MatchString(c.text) {
					method = http.MethodPost
				}
				path = workerVar.ReplaceAllStringFunc(path, func(string) string { return warmWorker(t, listeners["9102"]) })
				if strings.Contains(path, "$") {
					t.Errorf("%s:%d: %s: the test does not know what to put for the shell variable", runbookFile, c.line, path)
					continue
				}
				tried[port] = true
				// A command that sends the admin token gets the edge's.
				bearer := strings.Contains(c.text, `Authorization: Bearer $ADMIN_TOKEN`)
				if problem := requestProblem(method, base+path, port == "9100", bearer); problem != "" {
					t.Errorf("%s:%d: %s localhost:%s%s: %s", runbookFile, c.line, method, port, path, problem)
				}
			}
		}
		for port := range listeners {
			if !tried[port] {
				t.Errorf("%s shows no request to localhost:%s: the check above found nothing to check there", runbookFile, port)
			}
		}
	})
}

// TestDashboardIsImportable checks the dashboard's shape: panels in rows, every query on the
// ${datasource} variable, every variable a query uses defined, unique names for the panels the
// runbook refers to.
func TestDashboardIsImportable(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 39 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want a uid, a title and schema 39 or later (Grafana 10.4+)", d.UID, d.Title, d.SchemaVersion)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Name == "datasource" && (v.Type != "datasource" || string(v.Query) != `"prometheus"`) {
			t.Errorf("variable datasource: got type %q query %s, want a Prometheus data source variable", v.Type, v.Query)
		}
	}
	if !vars["datasource"] {
		t.Error("no datasource variable: the dashboard would be tied to one Grafana's data source")
	}
	for _, q := range d.queries() {
		for _, m := range grafanaVar.FindAllStringSubmatch(q.expr, -1) {
			if !strings.HasPrefix(m[1], "__") && !vars[m[1]] {
				t.Errorf("%s: $%s is not a variable of the dashboard", q.where, m[1])
			}
		}
	}
	if len(d.Panels) == 0 || d.Panels[0].Type != "row" {
		t.Fatal("the first panel must be a row: every panel belongs to one")
	}
	ids := map[int]bool{}
	titles := map[string]bool{}
	row := ""
	for _, p := range d.allPanels() {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			row = p.Title
			continue
		}
		name := row + " › " + p.Title
		if p.Title == "" || titles[name] {
			t.Errorf("panel %q: want a title, unique in its row", name)
		}
		titles[name] = true
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: data source %q, want ${datasource}", name, p.Datasource.UID)
		}
		if g := p.GridPos; g == nil || g.W <= 0 || g.H <= 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v does not fit a 24-column grid", name, g)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", name)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q, query %s: expr %q on data source %q, want an expr on ${datasource}", name, tg.RefID, tg.Expr, tg.Datasource.UID)
			}
		}
	}
}

// TestRunbookNamesWhatExists checks the runbook's names that no running stack shows: panels
// (as **Row › Panel**), links, log messages (as jq's .msg == "..."), RENDER_ERR_* codes, config
// keys and environment variables (which must exist), and its YAML snippets (which each
// process's own validation must accept).
func TestRunbookNamesWhatExists(t *testing.T) {
	runbook := readRunbook(t)

	t.Run("panels", func(t *testing.T) {
		panels := map[string]bool{}
		row := ""
		for _, p := range readDashboard(t).allPanels() {
			if p.Type == "row" {
				row = p.Title
			}
			panels[row+" › "+p.Title] = true
		}
		for _, m := range panelRef.FindAllStringSubmatch(runbook.text, -1) {
			if name := strings.Join(strings.Fields(m[1]), " "); !panels[name] {
				t.Errorf("%s names the panel **%s**, which %s does not have", runbookFile, name, dashboardFile)
			}
		}
	})

	t.Run("links", func(t *testing.T) {
		for _, m := range mdLink.FindAllStringSubmatch(runbook.text, -1) {
			file, anchor, _ := strings.Cut(m[1], "#")
			target := filepath.Join(harness.RepoRoot, filepath.Dir(runbookFile), file)
			if file == "" {
				target = filepath.Join(harness.RepoRoot, runbookFile)
			}
			text, err := os.ReadFile(target)
			if err != nil {
				t.Errorf("%s links to %s: %v", runbookFile, m[1], err)
				continue
			}
			if anchor != "" && !slices.Contains(headingAnchors(string(text)), anchor) {
				t.Errorf("%s links to %s: %s has no such heading", runbookFile, m[1], target)
			}
		}
	})

	t.Run("log lines and error codes", func(t *testing.T) {
		sources := sourceText(t)
		errorCodes, err := os.ReadFile(filepath.Join(harness.RepoRoot, "renderer", "src", "errors.js"))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range runbook.commands {
			for _, m := range logMessage.FindAllStringSubmatch(c.text, -1) {
				literals := []string{`"` + m[2] + `"`, `'` + m[2] + `'`}
				if m[1] != "==" {
					literals = []string{`"` + m[2], `'` + m[2], "`" + m[2]}
				}
				if !slices.ContainsFunc(literals, func(l string) bool { return strings.Contains(sources, l) }) {
					t.Errorf("%s:%d: no process logs %q (not a string in renderer/src or edge/)", runbookFile, c.line, m[2])
				}
			}
			for _, code := range renderErrCode.FindAllString(c.text, -1) {
				if !strings.Contains(string(errorCodes), "'"+code+"'") {
					t.Errorf("%s:%d: %s is not a code in renderer/src/errors.js", runbookFile, c.line, code)
				}
			}
		}
	})

	t.Run("config", func(t *testing.T) {
		edgeKeys := map[string]bool{}
		for f := range reflect.TypeFor[config.Edge]().Fields() {
			edgeKeys[strings.Split(f.Tag.Get("yaml"), ",")[0]] = true
		}
		var rendererKeys, edgeEnv []string
		var rendererConfigs []rendererConfig
		for _, c := range runbook.commands {
			for _, m := range configKey.FindAllStringSubmatch(c.text, -1) {
				if m[1] == "edge" && !edgeKeys[m[2]] {
					t.Errorf("%s:%d: edge.%s is not a key of the edge's config", runbookFile, c.line, m[2])
				}
				if m[1] == "renderer" {
					rendererKeys = append(rendererKeys, m[2])
				}
			}
			env := map[string]string{}
			for _, m := range envVar.FindAllStringSubmatch(c.text, -1) {
				key := strings.ToLower(m[2])
				switch {
				case m[1] == "EDGE" && !edgeKeys[key]:
					t.Errorf("%s:%d: SSR_EDGE_%s names no key of the edge's config", runbookFile, c.line, m[2])
				case m[1] == "EDGE" && m[3] != "":
					edgeEnv = append(edgeEnv, "SSR_EDGE_"+m[2]+"="+m[4])
				case m[1] == "RENDERER":
					rendererKeys = append(rendererKeys, key)
					if m[3] != "" {
						env["SSR_RENDERER_"+m[2]] = m[4]
					}
				}
			}
			if len(env) > 0 {
				rendererConfigs = append(rendererConfigs, rendererConfig{fmt.Sprintf("%s:%d", runbookFile, c.line), harness.RendererConfig{Env: env}})
			}
		}
		if _, err := config.Load("", edgeEnv); err != nil {
			t.Errorf("%s: the edge refuses its environment variables %v: %v", runbookFile, edgeEnv, err)
		}
		for _, b := range runbook.blocks {
			if b.lang != "yaml" {
				continue
			}
			var sections map[string]map[string]any
			if err := yaml.Unmarshal([]byte(b.text), &sections); err != nil {
				t.Errorf("%s:%d: YAML block: %v", runbookFile, b.line, err)
				continue
			}
			where := fmt.Sprintf("%s:%d", runbookFile, b.line)
			if _, ok := sections["edge"]; ok {
				path := filepath.Join(t.TempDir(), "ssr.yaml")
				if err := os.WriteFile(path, []byte(b.text), 0o644); err != nil {
					t.Fatal(err)
				}
				if _, err := config.Load(path, nil); err != nil {
					t.Errorf("%s: the edge refuses this YAML block: %v", where, err)
				}
			}
			if _, ok := sections["renderer"]; ok {
				rendererConfigs = append(rendererConfigs, rendererConfig{where, harness.RendererConfig{Text: b.text}})
			}
		}
		checkRendererConfig(t, rendererKeys, rendererConfigs)
	})
}

// ---- the stack ----

// exposeEverySeries drives the traffic after which both processes expose a sample of every
// series the documents query: a miss, a hit and a stale hit with its background refresh,
// coalesced requests on a page that sets a cookie (each waiter renders again for itself), a
// page that throws, and a request quarantined after its renders killed two workers.
func exposeEverySeries(t *testing.T, renderer *harness.Process, edge *edgeProcess, g *gates) {
	t.Helper()
	assertSSR(t, harness.Get(t, edge.url+"/"), 200)
	assertFallback(t, harness.Get(t, edge.url+"/throws"), 200, "render-error")

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			resp, err := harness.NoRedirects.Get(edge.url + "/cached/cookie?ms=200")
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()

	// A streamed page whose reviews are held back past its stream deadline ends partial;
	// then they are let through, and its render, stored, has freed its worker for the
	// quarantine below.
	if body := harness.Get(t, edge.url+"/streamed-partial/1").Text; !strings.Contains(body, abortedMark) {
		t.Fatalf("the streamed page did not end partial:\n%.3000s", body)
	}
	g.open("1")
	poll.Until(t, "the complete render is cached", func() bool {
		return strings.Contains(harness.Get(t, edge.url+"/streamed-partial/1").Header.Get("Cache-Status"), "hit")
	})

	harness.Get(t, edge.url+"/cached/products/1")
	harness.Get(t, edge.url+"/cached/products/1")
	edge.advance(t, 90*time.Second) // past the route's 1m ttl, inside its 1m stale-while-revalidate
	harness.Get(t, edge.url+"/cached/products/1")

	// A render that runs on after its caller left ends its worker (renderer_runs_on_total).
	assertFallback(t, harness.Get(t, edge.url+"/slices"), 200, "timeout")
	poll.Until(t, "the worker of the render that ran on to be ended", func() bool {
		return sum(scrape(t, renderer.HTTPURL("/metrics")), "renderer_runs_on_total") == 1
	})
	poll.Until(t, "its replacement to be warm", func() bool {
		return harness.Get(t, renderer.HTTPURL("/readyz")).StatusCode == http.StatusOK
	})
	quarantineLoops(t, renderer, edge)
	assertFallback(t, harness.Get(t, edge.url+"/loops"), 200, "quarantined")
	poll.Until(t, "the background refresh to be counted", func() bool {
		return sum(scrape(t, edge.admin+"/metrics"), "edge_cache_background_refreshes_total") > 0
	})
	poll.Until(t, "the terminated workers' replacements to be warm", func() bool {
		return harness.Get(t, renderer.HTTPURL("/readyz")).StatusCode == http.StatusOK
	})
}

// stackMetrics is what each process exposes: process → metric (as sampled: a histogram's
// x_bucket, x_sum, x_count) → the label names its samples carry.
type stackMetrics map[string]map[string]map[string]bool

var sampleLabel = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"`)

// metricFamilies turns scrape's samples into metric names and their label names.
func metricFamilies(samples map[string]float64) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for key := range samples {
		name, labels, _ := strings.Cut(key, "{")
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		for _, m := range sampleLabel.FindAllStringSubmatch(labels, -1) {
			out[name][m[1]] = true
		}
	}
	return out
}

// metricOwners are the processes that must expose name: edge_ the edge, renderer_ the
// renderer, either one the runtimes' metrics (go_, nodejs_, process_).
func metricOwners(name string) []string {
	switch {
	case strings.HasPrefix(name, "edge_"):
		return []string{"edge"}
	case strings.HasPrefix(name, "renderer_"):
		return []string{"renderer"}
	}
	return []string{"edge", "renderer"}
}

// labels returns the label names of name's samples, and whether its process exposes it.
func (s stackMetrics) labels(name string) (map[string]bool, bool) {
	for _, p := range metricOwners(name) {
		if l, ok := s[p][name]; ok {
			return l, true
		}
	}
	return nil, false
}

// scrapeLabels are added by whoever scrapes (Prometheus, the PodMonitor), not by the processes.
var scrapeLabels = map[string]bool{"instance": true, "job": true, "namespace": true, "pod": true, "container": true, "endpoint": true}

var (
	// Metric names: the processes' own prefixes and the runtimes' (Go's, Node's, process_).
	promMetric   = regexp.MustCompile(`\b(?:edge|renderer|process|nodejs|go)_[a-zA-Z0-9_:]+`)
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promSelector = regexp.MustCompile(`\b((?:edge|renderer|process|nodejs|go)_[a-zA-Z0-9_:]+)\s*\{([^}]*)\}`)
	promMatcher  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	// Grafana's label_values(metric{...}, label) in a variable's query.
	promLabelValues = regexp.MustCompile(`label_values\(\s*((?:edge|renderer|process|nodejs|go)_[a-zA-Z0-9_:]+)\s*(?:\{[^}]*\})?\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)`)
)

// problems lists what query names that the stack does not expose. Label values are never
// checked, only names: a label selected in a metric's braces must be on that metric, one
// grouped by (by, on...) on one of the query's metrics.
func (s stackMetrics) problems(query string) []string {
	q := promString.ReplaceAllString(query, `""`) // so that label values hide no braces or names
	names := promMetric.FindAllString(q, -1)
	var out []string
	exposed := map[string]map[string]bool{}
	for _, n := range names {
		if l, ok := s.labels(n); ok {
			exposed[n] = l
		} else {
			out = append(out, fmt.Sprintf("%s is not on the %s's /metrics", n, strings.Join(metricOwners(n), " or the ")))
		}
	}
	need := func(label string, on ...string) {
		if scrapeLabels[label] {
			return
		}
		var checked []string
		for _, n := range on {
			if l, ok := exposed[n]; ok {
				if l[label] {
					return
				}
				checked = append(checked, n)
			}
		}
		if checked != nil {
			out = append(out, fmt.Sprintf("no sample of %s has the label %q", strings.Join(slices.Compact(slices.Sorted(slices.Values(checked))), ", "), label))
		}
	}
	for _, m := range promSelector.FindAllStringSubmatch(q, -1) {
		for _, l := range promMatcher.FindAllStringSubmatch(m[2], -1) {
			need(l[1], m[1])
		}
	}
	for _, m := range promLabelValues.FindAllStringSubmatch(q, -1) {
		need(m[2], m[1])
	}
	for _, m := range promGrouping.FindAllStringSubmatch(q, -1) {
		for l := range strings.SplitSeq(m[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				need(l, names...)
			}
		}
	}
	return out
}

var (
	// A URL on a local port, as the runbook's commands reach the listeners (port-forwarded in
	// the pod): the port, then the path and query.
	localURL = regexp.MustCompile(`(?:https?://)?(?:localhost|127\.0\.0\.1):(\d+)(/[^\s'"\x60)]*)?`)
	postFlag = regexp.MustCompile(`-X\s*POST\b|--request\s+POST\b`)
	// The runbook's shell variable for a worker id; the test puts a warm worker's there.
	workerVar = regexp.MustCompile(`\$\{?WORKER\}?`)
)

const publicPort = "8080"

// warmWorker returns the id of a warm worker, from the debug listener at base.
func warmWorker(t *testing.T, base string) string {
	t.Helper()
	var list struct {
		Workers []struct {
			ID    int    `json:"id"`
			State string `json:"state"`
		} `json:"workers"`
	}
	if err := json.Unmarshal([]byte(harness.Get(t, base+"/debug/workers").Text), &list); err != nil {
		t.Fatalf("/debug/workers: %v", err)
	}
	for _, w := range list.Workers {
		if w.State == "ready" {
			return fmt.Sprint(w.ID)
		}
	}
	t.Fatal("/debug/workers lists no warm worker")
	return ""
}

// requestProblem says what is wrong with the answer to method url, or "". On the edge's admin
// listener a GET is only asked with OPTIONS, which the router answers 405 naming the methods
// of a route it has: a profile would take its seconds. Everything else is sent as written
// and must succeed, with the admin token when bearer (the command sends $ADMIN_TOKEN); an
// answer that names a file (a heap snapshot) must have written it.
func requestProblem(method, url string, edgeAdmin, bearer bool) string {
	probe := method
	if edgeAdmin && method == http.MethodGet {
		probe = http.MethodOptions
	}
	req, err := http.NewRequest(probe, url, nil)
	if err != nil {
		return err.Error()
	}
	if bearer {
		req.Header.Set("Authorization", "Bearer "+adminToken)
	}
	resp, err := harness.NoRedirects.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if probe == http.MethodOptions {
		if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(resp.Header.Get("Allow"), method) {
			return fmt.Sprintf("no %s route: OPTIONS got %d, Allow %q", method, resp.StatusCode, resp.Header.Get("Allow"))
		}
		return ""
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Sprintf("got %d: %.200s", resp.StatusCode, body)
	}
	var named struct{ Path string }
	if json.Unmarshal(body, &named) == nil && named.Path != "" {
		if _, err := os.Stat(named.Path); err != nil {
			return fmt.Sprintf("the answer names %s: %v", named.Path, err)
		}
	}
	return ""
}

// ---- the dashboard ----

type dashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
			// A string for a data source variable, {"query": "label_values(...)"} for a
			// query variable.
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []dashboardPanel `json:"panels"`
}

type dashboardPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos *struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		RefID      string `json:"refId"`
		Expr       string `json:"expr"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
	} `json:"targets"`
	// A collapsed row keeps its panels here.
	Panels []dashboardPanel `json:"panels"`
}

func readDashboard(t *testing.T) *dashboard {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot, dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return &d
}

// allPanels lists the panels in order, rows included, a collapsed row's panels after it.
func (d *dashboard) allPanels() []dashboardPanel {
	var out []dashboardPanel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

type dashboardQuery struct{ where, expr string }

// queries are the PromQL of every panel and of every query variable.
func (d *dashboard) queries() []dashboardQuery {
	var out []dashboardQuery
	for _, v := range d.Templating.List {
		var q struct{ Query string }
		if v.Type == "query" && json.Unmarshal(v.Query, &q) == nil {
			out = append(out, dashboardQuery{fmt.Sprintf("variable $%s", v.Name), q.Query})
		}
	}
	row := ""
	for _, p := range d.allPanels() {
		if p.Type == "row" {
			row = p.Title
		}
		for _, tg := range p.Targets {
			out = append(out, dashboardQuery{fmt.Sprintf("panel %q (row %s), query %s", p.Title, row, tg.RefID), tg.Expr})
		}
	}
	return out
}

var grafanaVar = regexp.MustCompile(`\$\{?(\w+)`)

// ---- the runbook ----

type runbookDoc struct {
	text     string
	blocks   []codeBlock
	commands []codeBlock // each line of a fenced block (continuation lines joined), each inline code span
}

type codeBlock struct {
	lang, text string
	line       int
}

var (
	mdFence = regexp.MustCompile("^\\s*```\\s*(\\w*)")
	mdCode  = regexp.MustCompile("`([^`]+)`")
	// **Row › Panel**, how the runbook names a dashboard panel.
	panelRef = regexp.MustCompile(`\*\*([^*›]+ › [^*]+)\*\*`)
	// jq's .msg == "..." (a whole message) or .msg | startswith("...") (one that goes on).
	logMessage    = regexp.MustCompile(`\.msg (==|\\?\| startswith\() ?"([^"]+)"`)
	renderErrCode = regexp.MustCompile(`\bRENDER_ERR_[A-Z_]+\b`)
	configKey     = regexp.MustCompile(`(?:^|[^\w./-])(edge|renderer)\.([a-z][a-z0-9_]*)`)
	// A relative link, to a file of the repository or a heading.
	mdLink    = regexp.MustCompile(`\]\(((?:\.\./|#)[^)\s]*|[\w./-]+\.md(?:#[^)\s]*)?)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6}\s+(.+)$`)
	// SSR_<SECTION>_<KEY>, with its value when the text assigns one.
	envVar = regexp.MustCompile(`\bSSR_(EDGE|RENDERER)_([A-Z0-9_]+)\b(=(\S*))?`)
)

func readRunbook(t *testing.T) *runbookDoc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot, runbookFile))
	if err != nil {
		t.Fatal(err)
	}
	rb := &runbookDoc{text: string(b)}
	var prose strings.Builder
	var block *codeBlock
	pending := ""
	for i, line := range strings.Split(rb.text, "\n") {
		if m := mdFence.FindStringSubmatch(line); m != nil {
			if block == nil {
				block = &codeBlock{lang: m[1], line: i + 1}
			} else {
				rb.blocks = append(rb.blocks, *block)
				block = nil
			}
			prose.WriteString("\n")
			continue
		}
		if block == nil {
			prose.WriteString(line + "\n")
			continue
		}
		block.text += line + "\n"
		if cont, ok := strings.CutSuffix(strings.TrimSpace(line), `\`); ok {
			pending += cont + " "
			continue
		}
		rb.commands = append(rb.commands, codeBlock{lang: block.lang, text: pending + strings.TrimSpace(line), line: i + 1})
		pending = ""
	}
	// Inline code may wrap: report it at the line it starts on.
	text := prose.String()
	for _, loc := range mdCode.FindAllStringSubmatchIndex(text, -1) {
		rb.commands = append(rb.commands, codeBlock{
			text: strings.Join(strings.Fields(text[loc[2]:loc[3]]), " "),
			line: strings.Count(text[:loc[0]], "\n") + 1,
		})
	}
	return rb
}

// headingAnchors are the anchors GitHub gives a Markdown file's headings.
func headingAnchors(markdown string) []string {
	var out []string
	for _, m := range mdHeading.FindAllStringSubmatch(markdown, -1) {
		out = append(out, strings.Map(func(r rune) rune {
			switch {
			case r == ' ':
				return '-'
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				return unicode.ToLower(r)
			}
			return -1
		}, strings.TrimSpace(m[1])))
	}
	return out
}

// sourceText is the processes' own source, where their log messages are written.
func sourceText(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, dir := range []string{filepath.Join(harness.RepoRoot, "renderer", "src"), filepath.Join(harness.RepoRoot, "edge")} {
		err := filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
			if err != nil || strings.HasSuffix(path, "_test.go") || !(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".js")) {
				return err
			}
			src, err := os.ReadFile(path)
			b.Write(src)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// rendererConfig is a config the renderer's own parser must accept, and where it is written.
type rendererConfig struct {
	where string
	harness.RendererConfig
}

// checkRendererConfig asks the renderer's config parser (renderer/src/config.js) which of keys
// it does not know, and what it refuses in configs.
func checkRendererConfig(t *testing.T, keys []string, configs []rendererConfig) {
	t.Helper()
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	var inputs []harness.RendererConfig
	// A key it does not know fails as such whatever its value; any other failure is the value's.
	for _, key := range keys {
		inputs = append(inputs, harness.RendererConfig{Text: "renderer:\n  " + key + ": null"})
	}
	for _, c := range configs {
		inputs = append(inputs, c.RendererConfig)
	}
	parsed := harness.ParseRendererConfigs(t, inputs)
	for i, key := range keys {
		if strings.HasSuffix(parsed[i].Problem, "unknown key") {
			t.Errorf("%s names renderer.%s, which is not a key of the renderer's config", runbookFile, key)
		}
	}
	for i, c := range configs {
		if p := parsed[len(keys)+i].Problem; p != "" {
			t.Errorf("%s: the renderer refuses this config: %s", c.where, p)
		}
	}
}
