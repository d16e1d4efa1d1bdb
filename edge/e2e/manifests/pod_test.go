package manifests

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
)

// TestManifestPodAgainstBinaries plays the dev overlay's pod with the real renderer and
// edge: the env, args, config file and mounts the manifest gives each container (mount
// paths and the image root rewritten to temp dirs and the checkout, the pod's ports moved to
// free local ports), the sidecar first, then every probe requested as the kubelet would.
func TestManifestPodAgainstBinaries(t *testing.T) {
	r := render(t, "dev")
	pod := r.pod(t)
	// Unix socket paths are limited to 108 bytes: a short temp dir, not t.TempDir().
	root, err := os.MkdirTemp("", "ssr-pod-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })

	// The pod's network namespace: every declared container port gets a free local port.
	ports := map[int]int{}
	for _, c := range pod.containers() {
		for _, p := range c.Ports {
			ports[p.ContainerPort] = harness.FreePort(t)
		}
	}
	hostPort := regexp.MustCompile(`^([^/:\s]*):([0-9]+)$`)
	rewritePorts := func(s string) string {
		m := hostPort.FindStringSubmatch(s)
		if m == nil {
			return s
		}
		n, _ := strconv.Atoi(m[2])
		if local, ok := ports[n]; ok {
			return fmt.Sprintf("127.0.0.1:%d", local)
		}
		return "127.0.0.1:0" // a port nothing declares: nobody can reach it, only don't collide
	}

	// emptyDirs are shared by the containers that mount them.
	emptyDirs := map[string]string{}
	for _, v := range pod.Volumes {
		if v.EmptyDir != nil {
			emptyDirs[v.Name] = filepath.Join(root, "vol-"+v.Name)
			if err := os.MkdirAll(emptyDirs[v.Name], 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}

	for _, c := range pod.containers() {
		if c.Name != "edge" && c.Name != "renderer" {
			t.Fatalf("container %s: this test knows how to run only edge and renderer", c.Name)
		}
		// This container's view of the file system: its mounts, and the image's files.
		mounts := map[string]string{imageRoot: harness.RepoRoot}
		var configMaps []string
		for _, m := range c.VolumeMounts {
			if dir, ok := emptyDirs[m.Name]; ok {
				mounts[m.MountPath] = dir
				continue
			}
			mounts[m.MountPath] = filepath.Join(root, c.Name+"-vol-"+m.Name)
			configMaps = append(configMaps, m.Name)
		}
		rewrite := func(s string) string { return rewritePorts(rewritePaths(s, mounts)) }
		for _, volume := range configMaps {
			for _, v := range pod.Volumes {
				if v.Name != volume || v.ConfigMap == nil {
					continue
				}
				for _, cm := range r.find(t, "ConfigMap") {
					if cm.Metadata.Name != v.ConfigMap.Name {
						continue
					}
					dir := mounts[mountPathOf(c, volume)]
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					for file, text := range cm.Data {
						if err := os.WriteFile(filepath.Join(dir, file), []byte(rewriteYAML(t, text, rewrite)), 0o644); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}

		argv := imageEntrypoints(t)[c.Name]
		if len(c.Command) > 0 {
			argv = slices.Clone(c.Command)
		}
		argv = append(argv, c.Args...)
		for i := range argv {
			argv[i] = rewrite(argv[i])
		}
		switch argv[0] {
		case harness.RepoRoot + "/bin/edge":
			argv[0] = edgeBinary // TestMain's -race build of the same source
		case "node":
			argv[0] = harness.NodeBinary // the pinned Node 26, the major the image uses
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = root // not the checkout: relative paths in the config would fail here as in the image
		if c.WorkingDir != "" {
			cmd.Dir = rewrite(c.WorkingDir)
		}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "SSR_") && !strings.HasPrefix(kv, "GO") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		for _, e := range c.Env {
			value := rewrite(e.Value)
			if e.ValueFrom != nil {
				value = playValueFrom(t, c, e.Name, e.ValueFrom)
			}
			cmd.Env = append(cmd.Env, e.Name+"="+value)
		}
		p := harness.Start(t, c.Name, cmd)

		// A native sidecar's startup probe gates the next container, as in the pod.
		if c.StartupProbe != nil {
			waitProbe(t, p, c, "startup", c.StartupProbe, ports)
		}
	}

	for _, c := range pod.containers() {
		for kind, pr := range map[string]*probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
			if pr == nil {
				continue
			}
			t.Run(c.Name+"/"+kind, func(t *testing.T) {
				if code, err := requestProbe(c, pr, ports); err != nil || code != http.StatusOK {
					t.Errorf("%s %s probe: got %d, %v; want 200", c.Name, kind, code, err)
				}
			})
		}
	}
	if pod.container(t, "edge").LivenessProbe == nil || pod.container(t, "edge").ReadinessProbe == nil ||
		pod.container(t, "renderer").StartupProbe == nil || pod.container(t, "renderer").LivenessProbe == nil {
		t.Error("want liveness and readiness probes on the edge, startup and liveness probes on the renderer")
	}

	// Through the Service's port: a server-rendered page, so the socket and bundle paths agree.
	var svc service
	r.one(t, "Service", &svc)
	target, _ := resolvePort(svc.Spec.Ports[0].TargetPort, pod.containers()...)
	// The first request may fall back at the 150 ms render timeout (a cold connection, a -race
	// build compressing the page for the cache); the render goes on and fills the cache.
	poll.Until(t, "GET / through the Service's port server-rendered", func() bool {
		resp := harness.Get(t, fmt.Sprintf("http://127.0.0.1:%d/", ports[target]))
		return resp.StatusCode == http.StatusOK && resp.Header.Get("X-SSR-Fallback") == ""
	})
	if again := harness.Get(t, fmt.Sprintf("http://127.0.0.1:%d/", ports[target])); !strings.HasPrefix(again.Header.Get("Cache-Status"), "sidecar-ssr; hit") {
		t.Errorf("GET / again: Cache-Status %q, want a hit (the pod's config caches the demo's pages)", again.Header.Get("Cache-Status"))
	}

	// The admin port from inside the pod (loopback, where the renderer's app code runs):
	// purges need the token.
	admin, _ := resolvePort("admin", pod.containers()...)
	purge := fmt.Sprintf("http://127.0.0.1:%d/cache/purge?prefix=/", ports[admin])
	for _, tc := range []struct {
		token string
		want  int
	}{{"", http.StatusForbidden}, {"Bearer wrong", http.StatusForbidden}, {"Bearer " + podSecret, http.StatusOK}} {
		req, _ := http.NewRequest("POST", purge, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("purge from loopback with Authorization %q: got %d, want %d", tc.token, resp.StatusCode, tc.want)
		}
	}
}

// podSecret plays the admin token Secret the manifest refers to.
const podSecret = "pod-admin-token"

func mountPathOf(c container, volume string) string {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m.MountPath
		}
	}
	return ""
}

// rewritePaths moves a path under a mount (or the image root) to its local directory,
// longest mount first. The path may stand inside a value, as in unix:///run/ssr/x.sock.
func rewritePaths(s string, mounts map[string]string) string {
	from := make([]string, 0, len(mounts))
	for m := range mounts {
		from = append(from, m)
	}
	slices.SortFunc(from, func(a, b string) int { return len(b) - len(a) })
	starts := func(i int) bool { return i == 0 || strings.ContainsRune("/:= ", rune(s[i-1])) }
	for _, m := range from {
		if i := strings.Index(s, m+"/"); i >= 0 && starts(i) {
			return s[:i] + mounts[m] + s[i+len(m):]
		}
		if strings.HasSuffix(s, m) && starts(len(s)-len(m)) {
			return s[:len(s)-len(m)] + mounts[m]
		}
	}
	return s
}

// rewriteYAML applies rewrite to every scalar of a YAML document, keeping its structure.
func rewriteYAML(t *testing.T, text string, rewrite func(string) string) string {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("ssr.yaml: %v", err)
	}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
			n.Value = rewrite(n.Value)
		}
		for i, c := range n.Content {
			if n.Kind == yaml.MappingNode && i%2 == 0 {
				continue // keys stay
			}
			walk(c)
		}
	}
	walk(&doc)
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// requestProbe does what the kubelet's HTTP prober does: GET scheme://podIP:port/path with
// its User-Agent and the probe's headers, timeoutSeconds (default 1 s), no redirects.
func requestProbe(c container, p *probe, ports map[int]int) (int, error) {
	if p.HTTPGet == nil {
		return 0, fmt.Errorf("not an httpGet probe: this test only plays httpGet")
	}
	port, ok := resolvePort(p.HTTPGet.Port, c) // a named port resolves in the probe's own container
	if !ok {
		return 0, fmt.Errorf("port %v is not a port of container %s", p.HTTPGet.Port, c.Name)
	}
	scheme := strings.ToLower(p.HTTPGet.Scheme)
	if scheme == "" {
		scheme = "http"
	}
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	req, err := http.NewRequest("GET", fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, ports[port], p.HTTPGet.Path), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("User-Agent", "kube-probe/1.30")
	req.Header.Set("Accept", "*/*")
	for _, h := range p.HTTPGet.HTTPHeaders {
		req.Header.Set(h.Name, h.Value)
	}
	client := &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// waitProbe polls a probe until it answers 200, within the budget the manifest gives it
// (periodSeconds × failureThreshold, at most a minute here), and at most 5 s after the
// process has logged "ready" (a probe that fails then fails for good).
func waitProbe(t *testing.T, p *harness.Process, c container, kind string, pr *probe, ports map[int]int) {
	t.Helper()
	budget := time.Duration(max(pr.PeriodSeconds, 1)*max(pr.FailureThreshold, 1)) * time.Second
	deadline := time.Now().Add(min(budget, time.Minute))
	var readySince time.Time
	var code int
	var err error
	for time.Now().Before(deadline) {
		if code, err = requestProbe(c, pr, ports); err == nil && code == http.StatusOK {
			return
		}
		select {
		case <-p.Exited():
			t.Fatalf("%s exited before its %s probe passed (last %d, %v)", c.Name, kind, code, err)
		case <-time.After(100 * time.Millisecond):
		}
		if readySince.IsZero() && p.HasLog("ready") {
			readySince = time.Now()
		}
		if !readySince.IsZero() && time.Since(readySince) > 5*time.Second {
			break
		}
	}
	t.Fatalf("%s %s probe did not pass (budget periodSeconds × failureThreshold = %s): last %d, %v", c.Name, kind, budget, code, err)
}
