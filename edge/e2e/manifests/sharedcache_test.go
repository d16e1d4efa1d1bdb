package manifests

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

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
