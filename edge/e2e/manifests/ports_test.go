package manifests

import (
	"net"
	"strconv"
	"testing"
)

// TestManifestServicePorts checks that every Service port targets a port the pod declares,
// and that the Service exposes only the edge's public port (the one edge.listen binds).
func TestManifestServicePorts(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, r rendered, pod podSpec, cfg ssrConfig) {
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
