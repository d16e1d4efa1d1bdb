package e2e

// The Kubernetes manifests (deploy/k8s/) held against the binaries and against their own
// arithmetic. No cluster runs here, so the rendered dev overlay's pod is played by the real
// processes: the env, args, config and mounts the manifest gives each container, with the
// paths moved into a temp dir and the pod's ports onto free local ports, and every probe
// requested as the kubelet would. See deploy/k8s/README.md.

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
)

// Memory the renderer uses beyond its workers' V8 heap caps (deploy/k8s/README.md, "Sizing").
// Measured on this project's machine, 2026-11-22, Node 26.10.0, the demo's home page under
// `hey -c 4` for 10 s: VmHWM 219 MB with 1 worker, 369 MB with 3, i.e. ~75 MB per busy worker
// (heap used 31 MB on average, external 2.5 MB), ~145 MB for the main thread with one worker.
const (
	// workerOverheadMiB: per worker, beyond old + young + stack_mb + max_external_mb: code
	// space, the isolate, the thread's malloc arena.
	workerOverheadMiB = 28
	// mainThreadMiB: the main thread (grpc-js, fastify, prom-client, its own heap), the Node
	// binary's resident pages, libuv and V8's GC helper threads.
	mainThreadMiB = 160
	// edgeRuntimeMiB: the edge beyond its cache and its renders in flight: the Go runtime,
	// the binary, goroutines and buffers of about a thousand client connections.
	edgeRuntimeMiB = 64
	// edgeCopiesPerRender: a render in flight holds the reply, the document assembled from
	// it, and its compressed encodings while it is stored (together under 3 × the reply).
	edgeCopiesPerRender = 3
	// imageRoot is where both images put the repository's files (the Dockerfiles mirror the
	// repository layout under it); the test maps it back to the checkout.
	imageRoot = "/app"
)

// imageEntrypoints are the ENTRYPOINTs of the root Dockerfile's targets, named like the
// containers; TestManifestDockerfiles holds them to the file.
func imageEntrypoints(t *testing.T) map[string][]string {
	return map[string][]string{
		"edge":     {"/app/bin/edge"},
		"renderer": append(append([]string{"node"}, nodeFlags(t)...), "/app/renderer/src/main.js"),
	}
}

// ---- the subset of the Kubernetes API the tests read ----

type object struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"` // ConfigMap
	raw  yaml.Node
}

type deployment struct {
	Spec struct {
		Replicas *int `yaml:"replicas"`
		Template struct {
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type podSpec struct {
	TerminationGracePeriodSeconds *int `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		RunAsNonRoot   *bool `yaml:"runAsNonRoot"`
		RunAsUser      *int  `yaml:"runAsUser"`
		RunAsGroup     *int  `yaml:"runAsGroup"`
		SeccompProfile struct {
			Type string `yaml:"type"`
		} `yaml:"seccompProfile"`
	} `yaml:"securityContext"`
	InitContainers []container `yaml:"initContainers"`
	Containers     []container `yaml:"containers"`
	Volumes        []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
		EmptyDir *struct {
			Medium    string `yaml:"medium"`
			SizeLimit string `yaml:"sizeLimit"`
		} `yaml:"emptyDir"`
	} `yaml:"volumes"`
}

type container struct {
	Name          string   `yaml:"name"`
	Image         string   `yaml:"image"`
	Command       []string `yaml:"command"`
	Args          []string `yaml:"args"`
	WorkingDir    string   `yaml:"workingDir"`
	RestartPolicy string   `yaml:"restartPolicy"`
	Env           []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom any    `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	StartupProbe    *probe `yaml:"startupProbe"`
	LivenessProbe   *probe `yaml:"livenessProbe"`
	ReadinessProbe  *probe `yaml:"readinessProbe"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path        string `yaml:"path"`
		Port        any    `yaml:"port"` // a number or a container port's name
		Scheme      string `yaml:"scheme"`
		HTTPHeaders []struct {
			Name  string `yaml:"name"`
			Value string `yaml:"value"`
		} `yaml:"httpHeaders"`
	} `yaml:"httpGet"`
	PeriodSeconds    int `yaml:"periodSeconds"`
	TimeoutSeconds   int `yaml:"timeoutSeconds"`
	FailureThreshold int `yaml:"failureThreshold"`
}

type service struct {
	Spec struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort any    `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type hpa struct {
	Spec struct {
		MinReplicas *int `yaml:"minReplicas"`
		MaxReplicas int  `yaml:"maxReplicas"`
	} `yaml:"spec"`
}

// ssrConfig is the part of the shared YAML the budgets depend on.
type ssrConfig struct {
	Edge struct {
		Listen          string `yaml:"listen"`
		AdminListen     string `yaml:"admin_listen"`
		ShutdownDelay   string `yaml:"shutdown_delay"`
		ShutdownTimeout string `yaml:"shutdown_timeout"`
	} `yaml:"edge"`
	Renderer struct {
		GRPCAddress          string `yaml:"grpc_address"`
		HTTPListen           string `yaml:"http_listen"`
		Threads              *int   `yaml:"threads"`
		MaxOldGenerationMB   *int   `yaml:"max_old_generation_mb"`
		MaxYoungGenerationMB *int   `yaml:"max_young_generation_mb"`
		StackMB              *int   `yaml:"stack_mb"`
		MaxExternalMB        *int   `yaml:"max_external_mb"`
		MaxPageMB            *int   `yaml:"max_page_mb"`
		DrainTimeout         string `yaml:"drain_timeout"`
	} `yaml:"renderer"`
}

// rendered is one overlay as `kustomize build` prints it.
type rendered struct {
	name    string
	objects []object
}

func (r rendered) find(t *testing.T, kind string) []object {
	var out []object
	for _, o := range r.objects {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func (r rendered) one(t *testing.T, kind string, into any) object {
	t.Helper()
	found := r.find(t, kind)
	if len(found) != 1 {
		t.Fatalf("%s: got %d %s objects, want 1", r.name, len(found), kind)
	}
	if err := found[0].raw.Decode(into); err != nil {
		t.Fatalf("%s: %s: %v", r.name, kind, err)
	}
	return found[0]
}

func (r rendered) pod(t *testing.T) podSpec {
	t.Helper()
	var d deployment
	r.one(t, "Deployment", &d)
	return d.Spec.Template.Spec
}

// config returns the ssr.yaml of the ConfigMap mounted as the pod's "config" volume.
func (r rendered) config(t *testing.T, pod podSpec) (string, ssrConfig) {
	t.Helper()
	for _, v := range pod.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		for _, cm := range r.find(t, "ConfigMap") {
			if cm.Metadata.Name != v.ConfigMap.Name {
				continue
			}
			text, ok := cm.Data["ssr.yaml"]
			if !ok {
				t.Fatalf("%s: ConfigMap %s has no ssr.yaml", r.name, cm.Metadata.Name)
			}
			var c ssrConfig
			if err := yaml.Unmarshal([]byte(text), &c); err != nil {
				t.Fatalf("%s: ssr.yaml: %v", r.name, err)
			}
			return text, c
		}
		t.Fatalf("%s: volume %s names ConfigMap %s, which the overlay does not render", r.name, v.Name, v.ConfigMap.Name)
	}
	t.Fatalf("%s: the pod mounts no ConfigMap", r.name)
	return "", ssrConfig{}
}

// containers returns the pod's native sidecars (restartable init containers) and its
// containers, in start order.
// podConfig loads the pod's ssr.yaml as the edge binary does (defaults, file, validation).
func podConfig(t *testing.T, r rendered, pod podSpec) *config.Config {
	t.Helper()
	text, _ := r.config(t, pod)
	path := filepath.Join(t.TempDir(), "ssr.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatalf("the edge refuses the pod's ssr.yaml: %v", err)
	}
	return cfg
}

func (p podSpec) containers() []container {
	var out []container
	for _, c := range p.InitContainers {
		if c.RestartPolicy == "Always" {
			out = append(out, c)
		}
	}
	return append(out, p.Containers...)
}

func (p podSpec) container(t *testing.T, name string) container {
	t.Helper()
	for _, c := range append(slices.Clone(p.InitContainers), p.Containers...) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("the pod has no container %q", name)
	return container{}
}

// port resolves a probe's or Service's port (a number or a name) among ports, as the
// kubelet resolves a probe's named port in its own container.
func resolvePort(port any, c ...container) (int, bool) {
	switch p := port.(type) {
	case int:
		for _, c := range c {
			for _, cp := range c.Ports {
				if cp.ContainerPort == p {
					return p, true
				}
			}
		}
		return p, false
	case string:
		for _, c := range c {
			for _, cp := range c.Ports {
				if cp.Name == p {
					return cp.ContainerPort, true
				}
			}
		}
	}
	return 0, false
}

func kustomizeBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(repoRoot, "bin", "kustomize")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: run `make test-e2e` (it installs the pinned Go tools into bin/)", bin)
	}
	return bin
}

func overlays(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(repoRoot, "deploy", "k8s", "overlays", "*", "kustomization.yaml"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no overlays under deploy/k8s/overlays (%v)", err)
	}
	var names []string
	for _, d := range dirs {
		names = append(names, filepath.Base(filepath.Dir(d)))
	}
	return names
}

func render(t *testing.T, overlay string) rendered {
	t.Helper()
	return renderDir(t, "overlays/"+overlay, filepath.Join(repoRoot, "deploy", "k8s", "overlays", overlay))
}

// renderWith renders an overlay with components, from a kustomization beside overlays/
// (kustomize reads only paths inside its root).
func renderWith(t *testing.T, overlay string, components ...string) rendered {
	t.Helper()
	dir, err := os.MkdirTemp(filepath.Join(repoRoot, "deploy", "k8s"), ".test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../overlays/" + overlay + "\ncomponents:\n"
	for _, c := range components {
		k += "  - ../components/" + c + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return renderDir(t, "overlays/"+overlay+"+"+strings.Join(components, "+"), dir)
}

func renderDir(t *testing.T, name, dir string) rendered {
	t.Helper()
	cmd := exec.Command(kustomizeBinary(t), "build", dir)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("kustomize build %s: %v\n%s", name, err, msg)
	}
	r := rendered{name: name}
	dec := yaml.NewDecoder(strings.NewReader(string(out)))
	for {
		var node yaml.Node
		if err := dec.Decode(&node); err != nil {
			break
		}
		var o object
		if err := node.Decode(&o); err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		o.raw = node
		r.objects = append(r.objects, o)
	}
	if len(r.objects) == 0 {
		t.Fatalf("%s renders nothing", r.name)
	}
	return r
}

// ---- quantities ----

var quantity = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$`)

// mebibytes parses a Kubernetes memory quantity ("640Mi", "1Gi", "512M", "1048576").
func mebibytes(q string) (float64, error) {
	m := quantity.FindStringSubmatch(q)
	if m == nil {
		return 0, fmt.Errorf("cannot parse memory quantity %q", q)
	}
	n, _ := strconv.ParseFloat(m[1], 64)
	unit := map[string]float64{"": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
		"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[m[2]]
	return n * unit / (1 << 20), nil
}

var goMemLimit = regexp.MustCompile(`^([0-9]+)(B|KiB|MiB|GiB|TiB)?$`)

// goMemLimitMiB parses GOMEMLIMIT as the Go runtime does (bytes, or a B/KiB/MiB/GiB/TiB suffix).
func goMemLimitMiB(v string) (float64, error) {
	m := goMemLimit.FindStringSubmatch(v)
	if m == nil {
		return 0, fmt.Errorf("cannot parse GOMEMLIMIT %q", v)
	}
	n, _ := strconv.ParseFloat(m[1], 64)
	unit := map[string]float64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[m[2]]
	return n * unit / (1 << 20), nil
}

// v8YoungMiB is the young generation V8 really reserves for max_young_generation_mb:
// three semi-spaces, each young/3 rounded up to a power of two, half a MiB the smallest
// (48 → 48, 16 → 24, 1 → 1.5). TestV8YoungGenerationSizing holds it to the pinned Node's
// heap_size_limit; renderer/test/resource-limits.test.js does the same for its own copy.
func v8YoungMiB(young int) float64 {
	semi := 0.5
	for semi < float64(young)/3 {
		semi *= 2
	}
	return 3 * semi
}

// rendererBudgetMiB is the renderer memory limit the config needs: (threads + 1 spare while
// a worker is recycled) × (old + young as V8 sizes it + stack + external + overhead) + the
// main thread.
func rendererBudgetMiB(threads, old, young, stack, external int) int {
	return (threads+1)*(old+int(math.Ceil(v8YoungMiB(young)))+stack+external+workerOverheadMiB) + mainThreadMiB
}

// edgeBudgetMiB is what the edge's config lets it hold: the cache, every render in flight
// with a page of the largest size, and the runtime.
func edgeBudgetMiB(e config.Edge) int {
	return e.CacheMaxMB + e.MaxRendersInFlight*e.MaxPageMB*edgeCopiesPerRender + edgeRuntimeMiB
}

func TestV8YoungGenerationSizing(t *testing.T) {
	sizes := []int{1, 2, 4, 7, 12, 16, 24, 48, 64}
	// What V8 reports to a worker given maxYoungGenerationSizeMb, beyond its old generation.
	script := `const { Worker } = require('node:worker_threads');
		(async () => { for (const young of process.argv.slice(1).map(Number)) {
			const limit = await new Promise((resolve) => {
				const w = new Worker("require('node:worker_threads').parentPort.postMessage(require('node:v8').getHeapStatistics().heap_size_limit)",
					{ eval: true, resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: young } });
				w.once('message', (m) => { w.terminate(); resolve(m); });
			});
			console.log(limit / 1048576 - 32);
		} })();`
	args := []string{"-e", script}
	for _, young := range sizes {
		args = append(args, strconv.Itoa(young))
	}
	out, err := exec.Command(nodeBinary, args...).Output()
	if err != nil {
		t.Fatal(err)
	}
	real := strings.Fields(string(out))
	if len(real) != len(sizes) {
		t.Fatalf("node printed %q", out)
	}
	for i, young := range sizes {
		if got, want := strconv.FormatFloat(v8YoungMiB(young), 'f', -1, 64), real[i]; got != want {
			t.Errorf("v8YoungMiB(%d) = %s, the pinned Node's V8 reserves %s MiB", young, got, want)
		}
	}
	if got := rendererBudgetMiB(2, 128, 48, 4, 32); got != 880 {
		t.Errorf("rendererBudgetMiB(2, 128, 48, 4, 32) = %d, want 880 (the sum in deploy/k8s/README.md)", got)
	}
}

// TestManifestBudgets checks, for every overlay, the numbers that must add up: the
// renderer's memory limit against its heap caps, GOMEMLIMIT against the edge's limit, the
// grace period against the drains, and a PodDisruptionBudget only with more than one replica.
func TestManifestBudgets(t *testing.T) {
	for _, name := range overlays(t) {
		t.Run(name, func(t *testing.T) {
			r := render(t, name)
			pod := r.pod(t)
			_, cfg := r.config(t, pod)
			rc := cfg.Renderer

			t.Run("renderer memory", func(t *testing.T) {
				for key, v := range map[string]*int{
					"renderer.threads": rc.Threads, "renderer.max_old_generation_mb": rc.MaxOldGenerationMB,
					"renderer.max_young_generation_mb": rc.MaxYoungGenerationMB, "renderer.stack_mb": rc.StackMB,
					"renderer.max_external_mb": rc.MaxExternalMB,
				} {
					if v == nil || *v <= 0 {
						t.Fatalf("ssr.yaml: %s must be set explicitly (a pod without a CPU limit sees every core of the node; the sums need every cap)", key)
					}
				}
				renderer := pod.container(t, "renderer")
				limit, err := mebibytes(renderer.Resources.Limits["memory"])
				if err != nil {
					t.Fatalf("renderer limits.memory: %v", err)
				}
				need := rendererBudgetMiB(*rc.Threads, *rc.MaxOldGenerationMB, *rc.MaxYoungGenerationMB, *rc.StackMB, *rc.MaxExternalMB)
				if float64(need) > limit {
					t.Errorf("renderer memory limit %s (%.0f MiB) < (threads %d + 1) × (old %d + young %d as V8 sizes it, %g + stack %d + external %d + %d) + %d = %d MiB",
						renderer.Resources.Limits["memory"], limit, *rc.Threads, *rc.MaxOldGenerationMB,
						*rc.MaxYoungGenerationMB, v8YoungMiB(*rc.MaxYoungGenerationMB), *rc.StackMB, *rc.MaxExternalMB,
						workerOverheadMiB, mainThreadMiB, need)
				}
				if req, err := mebibytes(renderer.Resources.Requests["memory"]); err != nil || req < float64(need) {
					t.Errorf("renderer requests.memory %q is below the %d MiB the caps allow: the scheduler would overcommit the node", renderer.Resources.Requests["memory"], need)
				}
			})

			t.Run("edge GOMEMLIMIT", func(t *testing.T) {
				edge := pod.container(t, "edge")
				limit, err := mebibytes(edge.Resources.Limits["memory"])
				if err != nil {
					t.Fatalf("edge limits.memory: %v", err)
				}
				var soft string
				for _, e := range edge.Env {
					if e.Name == "GOMEMLIMIT" {
						soft = e.Value
					}
				}
				if soft == "" {
					t.Fatal("edge: no GOMEMLIMIT in env (as a literal value)")
				}
				got, err := goMemLimitMiB(soft)
				if err != nil {
					t.Fatal(err)
				}
				// At most 90 % of the limit: the runtime's non-heap memory and the binary sit above it.
				if got > 0.9*limit {
					t.Errorf("edge GOMEMLIMIT %s (%.0f MiB) is not below 90 %% of its memory limit %s (%.0f MiB)", soft, got, edge.Resources.Limits["memory"], limit)
				}
				e := podConfig(t, r, pod).Edge
				if need := edgeBudgetMiB(e); float64(need) > got {
					t.Errorf("edge GOMEMLIMIT %s < cache_max_mb %d + max_renders_in_flight %d × max_page_mb %d × %d + %d = %d MiB: the config lets the edge hold more than the GC is asked to keep it under",
						soft, e.CacheMaxMB, e.MaxRendersInFlight, e.MaxPageMB, edgeCopiesPerRender, edgeRuntimeMiB, need)
				}
			})

			t.Run("page size", func(t *testing.T) {
				e := podConfig(t, r, pod).Edge
				if rc.MaxPageMB == nil || *rc.MaxPageMB != e.MaxPageMB {
					t.Errorf("renderer.max_page_mb %v != edge.max_page_mb %d: set both, equal (the worker refuses what the edge would)", rc.MaxPageMB, e.MaxPageMB)
				}
			})

			t.Run("cache on like the demo", func(t *testing.T) {
				demo, err := config.Load("", nil)
				if err != nil {
					t.Fatal(err)
				}
				if got := podConfig(t, r, pod).Edge.Routes; !reflect.DeepEqual(got, demo.Edge.Routes) {
					t.Errorf("ssr.yaml routes %+v, want the demo's (embedded defaults) %+v", got, demo.Edge.Routes)
				}
			})

			t.Run("admin needs the token", func(t *testing.T) {
				if podConfig(t, r, pod).Edge.AdminTrustLoopback {
					t.Errorf("ssr.yaml: edge.admin_trust_loopback must be false in a pod: the renderer's app code shares its loopback")
				}
				var fromSecret bool
				for _, e := range pod.container(t, "edge").Env {
					if e.Name == "SSR_EDGE_ADMIN_TOKEN" && fromSecretKey(e.ValueFrom) {
						fromSecret = true
					}
				}
				if !fromSecret {
					t.Errorf("edge: SSR_EDGE_ADMIN_TOKEN does not come from a Secret (valueFrom.secretKeyRef)")
				}
			})

			t.Run("grace period", func(t *testing.T) {
				sum := time.Duration(0)
				for key, v := range map[string]string{"edge.shutdown_delay": cfg.Edge.ShutdownDelay,
					"edge.shutdown_timeout": cfg.Edge.ShutdownTimeout, "renderer.drain_timeout": rc.DrainTimeout} {
					d, err := time.ParseDuration(v)
					if err != nil {
						t.Fatalf("ssr.yaml: %s must be set explicitly: %v", key, err)
					}
					sum += d
				}
				grace := 30 * time.Second // the Kubernetes default
				if pod.TerminationGracePeriodSeconds != nil {
					grace = time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
				}
				if grace < sum {
					t.Errorf("terminationGracePeriodSeconds %s < shutdown_delay + shutdown_timeout + drain_timeout = %s", grace, sum)
				}
			})

			t.Run("disruption budget", func(t *testing.T) {
				var h hpa
				r.one(t, "HorizontalPodAutoscaler", &h)
				minReplicas := 1
				if h.Spec.MinReplicas != nil {
					minReplicas = *h.Spec.MinReplicas
				}
				pdbs := r.find(t, "PodDisruptionBudget")
				if minReplicas <= 1 && len(pdbs) > 0 {
					t.Errorf("a PodDisruptionBudget with minReplicas %d blocks node drains", minReplicas)
				}
				if minReplicas > 1 && len(pdbs) == 0 {
					t.Errorf("minReplicas %d and no PodDisruptionBudget: a drain may evict every pod at once", minReplicas)
				}
			})

			t.Run("security", func(t *testing.T) {
				sc := pod.SecurityContext
				if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || sc.RunAsGroup == nil || sc.SeccompProfile.Type != "RuntimeDefault" {
					t.Errorf("pod securityContext: want runAsNonRoot, a fixed runAsUser/runAsGroup and seccompProfile RuntimeDefault")
				}
				for _, c := range pod.containers() {
					s := c.SecurityContext
					if s.AllowPrivilegeEscalation == nil || *s.AllowPrivilegeEscalation || s.ReadOnlyRootFilesystem == nil || !*s.ReadOnlyRootFilesystem || !slices.Equal(s.Capabilities.Drop, []string{"ALL"}) {
						t.Errorf("container %s: want allowPrivilegeEscalation false, readOnlyRootFilesystem true, capabilities.drop [ALL]", c.Name)
					}
				}
				for _, v := range pod.Volumes {
					if v.EmptyDir != nil && v.EmptyDir.SizeLimit == "" {
						t.Errorf("emptyDir %s has no sizeLimit", v.Name)
					}
				}
			})
		})
	}
}

// TestManifestServicePorts checks that every Service port targets a port the pod declares,
// and that the Service exposes only the edge's public port (the one edge.listen binds).
func TestManifestServicePorts(t *testing.T) {
	for _, name := range overlays(t) {
		t.Run(name, func(t *testing.T) {
			r := render(t, name)
			pod := r.pod(t)
			_, cfg := r.config(t, pod)
			_, listen, _ := net.SplitHostPort(cfg.Edge.Listen)
			edge := pod.container(t, "edge")
			var svc service
			r.one(t, "Service", &svc)
			if len(svc.Spec.Ports) == 0 {
				t.Fatal("the Service has no ports")
			}
			for _, p := range svc.Spec.Ports {
				target := p.TargetPort
				if target == nil {
					target = p.Port
				}
				if _, ok := resolvePort(target, pod.containers()...); !ok {
					t.Errorf("Service port %s targets %v, which no container declares", p.Name, target)
					continue
				}
				n, ok := resolvePort(target, edge)
				if !ok || strconv.Itoa(n) != listen {
					t.Errorf("Service port %s targets %v: want only the edge's public port (edge.listen %s)", p.Name, target, cfg.Edge.Listen)
				}
			}
		})
	}
}

// TestManifestDockerfiles holds imageEntrypoints to the Dockerfiles, and checks that what
// they COPY from the build context (the repository root) exists and is not in .dockerignore.
// No container engine runs here: the images themselves are not built.
func TestManifestDockerfiles(t *testing.T) {
	ignore, err := os.ReadFile(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var ignored []string
	for _, line := range strings.Split(string(ignore), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			ignored = append(ignored, line)
		}
	}
	dockerfile, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^COPY\s+(.+)$`).FindAllStringSubmatch(string(dockerfile), -1) {
		fields := strings.Fields(m[1])
		if strings.HasPrefix(fields[0], "--from=") {
			continue
		}
		for _, src := range fields[:len(fields)-1] {
			if _, err := os.Stat(filepath.Join(repoRoot, src)); err != nil {
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
			ports[p.ContainerPort] = freePort(t)
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
		mounts := map[string]string{imageRoot: repoRoot}
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
		case repoRoot + "/bin/edge":
			argv[0] = edgeBinary // the harness's -race build of the same source
		case "node":
			argv[0] = nodeBinary // the pinned Node 26, the major the image uses
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
				if !fromSecretKey(e.ValueFrom) {
					t.Fatalf("container %s: env %s uses a valueFrom this test cannot play: %v", c.Name, e.Name, e.ValueFrom)
				}
				value = podSecret // the Secret, as an operator creates it
			}
			cmd.Env = append(cmd.Env, e.Name+"="+value)
		}
		p := startProcess(t, c.Name, cmd)

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
	// The first request may fall back at the 150 ms soft deadline (a cold connection, a -race
	// build compressing the page for the cache); the render goes on and fills the cache.
	waitUntil(t, 10*time.Second, "GET / through the Service's port server-rendered", func() bool {
		resp := get(t, fmt.Sprintf("http://127.0.0.1:%d/", ports[target]))
		return resp.StatusCode == http.StatusOK && resp.Header.Get("X-SSR-Fallback") == ""
	})
	if again := get(t, fmt.Sprintf("http://127.0.0.1:%d/", ports[target])); !strings.HasPrefix(again.Header.Get("Cache-Status"), "sidecar-ssr; hit") {
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

// fromSecretKey reports whether an env var's valueFrom is a secretKeyRef.
func fromSecretKey(valueFrom any) bool {
	m, ok := valueFrom.(map[string]any)
	return ok && m["secretKeyRef"] != nil
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

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
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
func waitProbe(t *testing.T, p *process, c container, kind string, pr *probe, ports map[int]int) {
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
		case <-p.exit:
			t.Fatalf("%s exited before its %s probe passed (last %d, %v)", c.Name, kind, code, err)
		case <-time.After(100 * time.Millisecond):
		}
		if readySince.IsZero() && hasLog(p, "ready") {
			readySince = time.Now()
		}
		if !readySince.IsZero() && time.Since(readySince) > 5*time.Second {
			break
		}
	}
	t.Fatalf("%s %s probe did not pass (budget periodSeconds × failureThreshold = %s): last %d, %v", c.Name, kind, budget, code, err)
}

func hasLog(p *process, msg string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, line := range p.lines {
		if line["msg"] == msg {
			return true
		}
	}
	return false
}

// TestSharedCacheComponent holds the shared-cache component together: the address it gives
// the edge names its Service and port, the Service selects the Valkey pods, only the edge's
// pods may reach that port, and Valkey's maxmemory plus its overhead fits its memory limit.
func TestSharedCacheComponent(t *testing.T) {
	r := renderWith(t, "prod", "shared-cache")
	type workload struct {
		Metadata struct{ Name string }
		Spec     struct {
			Template struct {
				Metadata struct{ Labels map[string]string }
				Spec     podSpec
			}
		}
	}
	workloads := map[string]workload{}
	for _, o := range r.find(t, "Deployment") {
		var w workload
		if err := o.raw.Decode(&w); err != nil {
			t.Fatal(err)
		}
		workloads[o.Metadata.Name] = w
	}
	edgePod, valkey := workloads["sidecar-ssr"], workloads["sidecar-ssr-valkey"]
	var address string
	for _, e := range edgePod.Spec.Template.Spec.container(t, "edge").Env {
		if e.Name == "SSR_EDGE_SHARED_CACHE_ADDRESS" {
			address = e.Value
		}
	}
	m := regexp.MustCompile(`^redis://([a-z0-9-]+):([0-9]+)/[0-9]+$`).FindStringSubmatch(address)
	if m == nil {
		t.Fatalf("edge: SSR_EDGE_SHARED_CACHE_ADDRESS %q, want redis://SERVICE:PORT/DB", address)
	}
	var port int
	for _, o := range r.find(t, "Service") {
		if o.Metadata.Name != m[1] {
			continue
		}
		var svc service
		o.raw.Decode(&svc)
		for k, v := range svc.Spec.Selector {
			if valkey.Spec.Template.Metadata.Labels[k] != v {
				t.Errorf("Service %s selects %s=%s, which the Valkey pods do not carry", m[1], k, v)
			}
		}
		for _, p := range svc.Spec.Ports {
			if strconv.Itoa(p.Port) == m[2] {
				port, _ = resolvePort(p.TargetPort, valkey.Spec.Template.Spec.Containers...)
			}
		}
	}
	if port == 0 {
		t.Fatalf("the edge's address %s names no Service port of the render that reaches a Valkey container port", address)
	}
	var allowed bool
	for _, o := range r.find(t, "NetworkPolicy") {
		var np struct {
			Spec struct {
				PodSelector struct {
					MatchLabels map[string]string `yaml:"matchLabels"`
				} `yaml:"podSelector"`
				Ingress []struct {
					From []struct {
						PodSelector *struct {
							MatchLabels map[string]string `yaml:"matchLabels"`
						} `yaml:"podSelector"`
					}
					Ports []struct{ Port any }
				}
			}
		}
		o.raw.Decode(&np)
		if np.Spec.PodSelector.MatchLabels["app.kubernetes.io/name"] != valkey.Spec.Template.Metadata.Labels["app.kubernetes.io/name"] {
			continue
		}
		for _, in := range np.Spec.Ingress {
			for _, from := range in.From {
				if from.PodSelector == nil || len(from.PodSelector.MatchLabels) == 0 {
					t.Errorf("NetworkPolicy %s: a rule admits more than the edge's pods", o.Metadata.Name)
					continue
				}
				for k, v := range from.PodSelector.MatchLabels {
					if edgePod.Spec.Template.Metadata.Labels[k] != v {
						t.Errorf("NetworkPolicy %s admits %s=%s, which the edge's pods do not carry", o.Metadata.Name, k, v)
					}
				}
				allowed = true
			}
		}
	}
	if !allowed {
		t.Error("no NetworkPolicy admits the edge's pods to Valkey (and only them)")
	}
	c := valkey.Spec.Template.Spec.Containers[0]
	i := slices.Index(c.Args, "--maxmemory")
	if i < 0 || i+1 >= len(c.Args) {
		t.Fatalf("valkey: no --maxmemory in %q", c.Args)
	}
	maxMB, err := mebibytes(strings.TrimSuffix(c.Args[i+1], "mb") + "M")
	limit, err2 := mebibytes(c.Resources.Limits["memory"])
	if err != nil || err2 != nil || maxMB+64 > limit {
		t.Errorf("valkey: maxmemory %s + 64 MiB overhead over its memory limit %s", c.Args[i+1], c.Resources.Limits["memory"])
	}
}
