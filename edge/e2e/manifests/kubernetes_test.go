package manifests

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
)

// The subset of the Kubernetes API the tests read, and the overlays as kustomize renders them.

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

// podConfig loads the pod's ssr.yaml, with env, as the edge binary does (defaults, file,
// environment, validation).
func podConfig(t *testing.T, r rendered, pod podSpec, env ...string) *config.Config {
	t.Helper()
	text, _ := r.config(t, pod)
	path := filepath.Join(t.TempDir(), "ssr.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, env)
	if err != nil {
		t.Fatalf("the edge refuses the pod's ssr.yaml: %v", err)
	}
	return cfg
}

// containers returns the pod's native sidecars (restartable init containers) and its
// containers, in start order.
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

// resolvePort resolves a probe's or Service's port (a number or a name) among ports, as the
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

// fromSecretKey reports whether an env var's valueFrom is a secretKeyRef.
func fromSecretKey(valueFrom any) bool {
	m, ok := valueFrom.(map[string]any)
	return ok && m["secretKeyRef"] != nil
}

// playValueFrom is what Kubernetes would give env var name of c from valueFrom: c's own
// CPU request in whole cores, or the Secret as an operator creates it (podSecret).
func playValueFrom(t *testing.T, c container, name string, valueFrom any) string {
	t.Helper()
	if cores, ok := ownCPURequest(valueFrom, c); ok {
		return cores
	}
	if !fromSecretKey(valueFrom) {
		t.Fatalf("container %s: env %s uses a valueFrom this test cannot play: %v", c.Name, name, valueFrom)
	}
	return podSecret
}

// ownCPURequest is the value Kubernetes gives an env var whose valueFrom is c's own CPU
// request in whole cores (resourceFieldRef requests.cpu, divisor 1: rounded up), or false
// when valueFrom is not that.
func ownCPURequest(valueFrom any, c container) (string, bool) {
	m, _ := valueFrom.(map[string]any)
	ref, _ := m["resourceFieldRef"].(map[string]any)
	if ref == nil || ref["resource"] != "requests.cpu" || ref["containerName"] != c.Name || (ref["divisor"] != nil && ref["divisor"] != "1") {
		return "", false
	}
	q := c.Resources.Requests["cpu"]
	millis, err := strconv.Atoi(strings.TrimSuffix(q, "m"))
	if !strings.HasSuffix(q, "m") {
		millis *= 1000
	}
	if err != nil || millis <= 0 {
		return "", false
	}
	return strconv.Itoa((millis + 999) / 1000), true
}

// kustomizeBinary is the pinned kustomize (a Go tool make installs into bin/).
var kustomizeBinary = filepath.Join(harness.RepoRoot, "bin", "kustomize")

func overlays(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(harness.RepoRoot, "deploy", "k8s", "overlays", "*", "kustomization.yaml"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no overlays under deploy/k8s/overlays (%v)", err)
	}
	var names []string
	for _, d := range dirs {
		names = append(names, filepath.Base(filepath.Dir(d)))
	}
	return names
}

// forEachOverlay runs test on every overlay, as a subtest: its render, its pod and the
// pod's ssr.yaml.
func forEachOverlay(t *testing.T, test func(t *testing.T, r rendered, pod podSpec, cfg ssrConfig)) {
	for _, name := range overlays(t) {
		t.Run(name, func(t *testing.T) {
			r := render(t, name)
			pod := r.pod(t)
			_, cfg := r.config(t, pod)
			test(t, r, pod, cfg)
		})
	}
}

func render(t *testing.T, overlay string) rendered {
	t.Helper()
	return renderDir(t, "overlays/"+overlay, filepath.Join(harness.RepoRoot, "deploy", "k8s", "overlays", overlay))
}

// renderWith renders an overlay with components, from a kustomization beside overlays/
// (kustomize reads only paths inside its root).
func renderWith(t *testing.T, overlay string, components ...string) rendered {
	t.Helper()
	dir, err := os.MkdirTemp(filepath.Join(harness.RepoRoot, "deploy", "k8s"), ".test-")
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
	cmd := exec.Command(kustomizeBinary, "build", dir)
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
