// Package manifests holds the Kubernetes manifests (deploy/k8s/) against the binaries and
// against their own arithmetic, one file a concern: the memory budgets and V8's heap sizing
// (budgets_test.go), the Service's ports (ports_test.go), the Dockerfile's targets
// (dockerfiles_test.go), the dev overlay's pod played by the real processes (pod_test.go),
// the shared-cache component (sharedcache_test.go) and, with the build tag images, the pod
// played by the real images (images_test.go). No cluster runs here. See deploy/k8s/README.md.
//
// It lives in the edge module, not beside deploy/k8s/, because it loads the pods' ssr.yaml
// with the edge's own config package (edge/internal/config), which Go lets only the edge
// module import.
package manifests

import (
	"path/filepath"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
)

// edgeBinary is the edge as the image builds it (no test clock), with the race detector.
var edgeBinary string

func TestMain(m *testing.M) {
	harness.Main(m, &edgeBinary, nil, harness.NodeBinary, kustomizeBinary, filepath.Join(harness.RepoRoot, "app", "dist", "server", "server.js"))
}
