//go:build images

package manifests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
)

// imagesEnv names the images TestPodImages runs, as "edge=REF,renderer=REF"; make
// test-images builds them (scripts/images.sh), sets it and runs this file (build tag images).
const imagesEnv = "SSR_TEST_IMAGES"

// TestPodImages runs the two images the way the prod overlay's pod runs them: one podman pod
// (one network namespace), the ConfigMap's files and the socket's emptyDir mounted where the
// manifest mounts them, its user, a read-only root file system, every capability dropped,
// the Secret's token, the native sidecar first and gated on its startup probe. Then: both
// readiness endpoints on the probes' ports, a page server-rendered through the edge
// container, the client-side-render shell while the renderer container is killed and server
// rendering once it is started again, SIGTERM draining both to exit 0. Where the images and
// the manifest disagree (user, entrypoint, ports), it fails naming both.
func TestPodImages(t *testing.T) {
	refs := map[string]string{}
	for _, kv := range strings.Split(os.Getenv(imagesEnv), ",") {
		if name, ref, ok := strings.Cut(kv, "="); ok {
			refs[name] = ref
		}
	}
	if refs["edge"] == "" || refs["renderer"] == "" {
		t.Fatalf("%s is not set: run `make test-images`, which builds the images and sets it", imagesEnv)
	}
	r := render(t, "prod")
	pod := r.pod(t)
	user := fmt.Sprintf("%d:%d", *pod.SecurityContext.RunAsUser, *pod.SecurityContext.RunAsGroup)

	for _, c := range pod.containers() {
		img := inspectImage(t, refs[c.Name])
		if img.Config.User != user {
			t.Errorf("image %s runs as %q, the manifest's pod as %q", refs[c.Name], img.Config.User, user)
		}
		if want := imageEntrypoints(t)[c.Name]; !slices.Equal(img.Config.Entrypoint, want) {
			t.Errorf("image %s: entrypoint %q, the manifest's container %s expects %q", refs[c.Name], img.Config.Entrypoint, c.Name, want)
		}
		for _, p := range c.Ports {
			if _, ok := img.Config.ExposedPorts[fmt.Sprintf("%d/tcp", p.ContainerPort)]; !ok {
				t.Errorf("image %s exposes %v, the manifest's container %s declares port %d (%s)", refs[c.Name], keys(img.Config.ExposedPorts), c.Name, p.ContainerPort, p.Name)
			}
		}
		t.Logf("image %s: %.0f MB", refs[c.Name], float64(img.Size)/1e6)
	}
	if t.Failed() {
		t.FailNow()
	}

	root := t.TempDir()
	name := fmt.Sprintf("ssr-test-%d", os.Getpid())
	ports := map[int]int{}
	create := []string{"pod", "create", "--name", name}
	for _, c := range pod.containers() {
		for _, p := range c.Ports {
			ports[p.ContainerPort] = harness.FreePort(t)
			create = append(create, "-p", fmt.Sprintf("127.0.0.1:%d:%d", ports[p.ContainerPort], p.ContainerPort))
		}
	}
	podman(t, create...)
	t.Cleanup(func() { exec.Command("podman", "pod", "rm", "-f", "-t", "0", name).Run() })

	// Volumes as the kubelet makes them: an emptyDir is a directory anyone may write to, a
	// ConfigMap's files are read-only.
	volumes, readOnly := map[string]string{}, map[string]bool{}
	for _, v := range pod.Volumes {
		dir := filepath.Join(root, v.Name)
		if err := os.Mkdir(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		switch {
		case v.EmptyDir != nil:
			os.Chmod(dir, 0o777)
		case v.ConfigMap != nil:
			readOnly[v.Name] = true
			for _, cm := range r.find(t, "ConfigMap") {
				if cm.Metadata.Name == v.ConfigMap.Name {
					for file, text := range cm.Data {
						if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
		volumes[v.Name] = dir
	}

	start := func(c container) {
		args := []string{"run", "-d", "--pod", name, "--name", name + "-" + c.Name, "--user", user}
		if ro := c.SecurityContext.ReadOnlyRootFilesystem; ro != nil && *ro {
			args = append(args, "--read-only")
		}
		for _, capability := range c.SecurityContext.Capabilities.Drop {
			args = append(args, "--cap-drop", capability)
		}
		if ape := c.SecurityContext.AllowPrivilegeEscalation; ape != nil && !*ape {
			args = append(args, "--security-opt", "no-new-privileges")
		}
		for _, m := range c.VolumeMounts {
			mount := volumes[m.Name] + ":" + m.MountPath
			if readOnly[m.Name] {
				mount += ":ro"
			}
			args = append(args, "-v", mount)
		}
		for _, e := range c.Env {
			value := e.Value
			if e.ValueFrom != nil {
				value = playValueFrom(t, c, e.Name, e.ValueFrom)
			}
			args = append(args, "-e", e.Name+"="+value)
		}
		if len(c.Command) > 0 {
			args = append(args, "--entrypoint", c.Command[0])
		}
		args = append(append(args, refs[c.Name]), c.Args...)
		podman(t, args...)
	}
	// waitReady polls a probe until it answers 200 within the manifest's budget for it.
	waitReady := func(c container, kind string, pr *probe) time.Duration {
		t.Helper()
		began := time.Now()
		budget := time.Duration(max(pr.PeriodSeconds, 1)*max(pr.FailureThreshold, 1)) * time.Second
		for time.Since(began) < min(budget, 2*time.Minute) {
			if code, err := requestProbe(c, pr, ports); err == nil && code == http.StatusOK {
				return time.Since(began)
			}
			time.Sleep(50 * time.Millisecond)
		}
		logs, _ := exec.Command("podman", "logs", name+"-"+c.Name).CombinedOutput()
		t.Fatalf("%s %s probe did not pass within %s\n%s", c.Name, kind, budget, logs)
		return 0
	}
	renderer, edge := pod.container(t, "renderer"), pod.container(t, "edge")
	for _, c := range pod.containers() {
		start(c)
		if c.StartupProbe != nil {
			t.Logf("%s: started to startup probe 200 in %s", c.Name, waitReady(c, "startup", c.StartupProbe).Round(time.Millisecond))
		}
	}
	t.Logf("edge: started to readiness probe 200 in %s", waitReady(edge, "readiness", edge.ReadinessProbe).Round(time.Millisecond))
	for _, c := range pod.containers() {
		for kind, pr := range map[string]*probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
			if pr != nil {
				if code, err := requestProbe(c, pr, ports); err != nil || code != http.StatusOK {
					t.Errorf("%s %s probe: got %d, %v; want 200", c.Name, kind, code, err)
				}
			}
		}
	}

	var svc service
	r.one(t, "Service", &svc)
	target, _ := resolvePort(svc.Spec.Ports[0].TargetPort, pod.containers()...)
	// Authorization bypasses the cache: every request below is a render, or its fallback.
	page := func() *http.Response {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", ports[target]), nil)
		req.Header.Set("Authorization", "Bearer test")
		resp, err := harness.NoRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	serverRendered := func() bool {
		resp := page()
		return resp.StatusCode == http.StatusOK && resp.Header.Get("X-SSR-Fallback") == ""
	}
	poll.Until(t, "GET / server-rendered through the edge container", serverRendered)

	podman(t, "kill", name+"-renderer")
	poll.Until(t, "the client-side-render shell while the renderer container is down", func() bool {
		resp := page()
		return resp.StatusCode == http.StatusOK && resp.Header.Get("X-SSR-Fallback") != ""
	})
	podman(t, "start", name+"-renderer")
	t.Logf("renderer: restarted to startup probe 200 in %s", waitReady(renderer, "startup", renderer.StartupProbe).Round(time.Millisecond))
	poll.Until(t, "GET / server-rendered again once the renderer container is back", serverRendered)

	// SIGTERM, as the kubelet sends it: the edge first (it stops taking requests), then the
	// sidecar; both drain and exit 0 within the pod's grace period.
	grace := strconv.Itoa(*pod.TerminationGracePeriodSeconds)
	for _, c := range []string{"edge", "renderer"} {
		podman(t, "stop", "-t", grace, name+"-"+c)
		if code := strings.TrimSpace(podman(t, "inspect", "--format", "{{.State.ExitCode}}", name+"-"+c)); code != "0" {
			logs, _ := exec.Command("podman", "logs", "--tail", "20", name+"-"+c).CombinedOutput()
			t.Errorf("%s exited %s after SIGTERM, want 0\n%s", c, code, logs)
		}
	}
}

// imageConfig is the part of `podman image inspect` the test reads.
type imageConfig struct {
	Size   int64
	Config struct {
		User         string
		Entrypoint   []string
		ExposedPorts map[string]any
	}
}

func inspectImage(t *testing.T, ref string) imageConfig {
	t.Helper()
	var out []imageConfig
	if err := json.Unmarshal([]byte(podman(t, "image", "inspect", ref)), &out); err != nil || len(out) != 1 {
		t.Fatalf("podman image inspect %s: %v", ref, err)
	}
	return out[0]
}

// podman runs podman with the machine's settings (scripts/podman.sh exports CONTAINERS_CONF).
func podman(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("podman", args...).Output()
	if err != nil {
		var stderr []byte
		if e, ok := err.(*exec.ExitError); ok {
			stderr = e.Stderr
		}
		t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
