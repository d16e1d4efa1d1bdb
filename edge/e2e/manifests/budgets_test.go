package manifests

import (
	"fmt"
	"math"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
)

// The numbers that must add up: the renderer's memory limit against its V8 heap caps (and
// V8's real young-generation sizing), GOMEMLIMIT against the edge's limit, the grace period
// against the drains, and the disruption budget against the replicas.

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
)

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
	return e.CacheMaxMB + e.RenderSlots*e.MaxPageMB*edgeCopiesPerRender + edgeRuntimeMiB
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
	out, err := exec.Command(harness.NodeBinary, args...).Output()
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
	forEachOverlay(t, func(t *testing.T, r rendered, pod podSpec, cfg ssrConfig) {
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
				t.Errorf("edge GOMEMLIMIT %s < cache_max_mb %d + render_slots %d × max_page_mb %d × %d + %d = %d MiB: the config lets the edge hold more than the GC is asked to keep it under",
					soft, e.CacheMaxMB, e.RenderSlots, e.MaxPageMB, edgeCopiesPerRender, edgeRuntimeMiB, need)
			}
		})

		t.Run("edge GOMAXPROCS", func(t *testing.T) {
			edge := pod.container(t, "edge")
			for _, e := range edge.Env {
				if e.Name == "GOMAXPROCS" {
					if _, ok := ownCPURequest(e.ValueFrom, edge); !ok {
						t.Errorf("edge GOMAXPROCS is not its own CPU request in whole cores (requests.cpu %q)", edge.Resources.Requests["cpu"])
					}
					return
				}
			}
			t.Error("edge: no GOMAXPROCS in env: Go would run a P per core of the node, not per core the edge asked for")
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
