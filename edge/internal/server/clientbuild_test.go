package server

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/logtest"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// TestPageLinksItsBundlesClientBuild: a page links the client build its bundle names when
// the edge knows it; one no manifest has named links the current build, and is counted
// and logged, once an id.
func TestPageLinksItsBundlesClientBuild(t *testing.T) {
	logs := &logtest.Buffer{}
	s := start(t, nil, func(o *Options) { o.Log = slog.New(slog.NewTextHandler(logs, nil)) })
	var clientBuild string
	s.renderer.render = func(ctx context.Context, req *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
		resp, err := renders("<main>x</main>")(ctx, req)
		resp.ClientBuildId = clientBuild
		return resp, err
	}
	for _, id := range []string{"b1", "", "zz", "zz"} {
		clientBuild = id
		if _, doc := get(t, s.url+"/products/7"); !strings.Contains(doc, `src="/assets/client-1.js"`) {
			t.Errorf("client build %q: the page does not link the current build:\n%s", id, doc)
		}
	}
	want := "# HELP edge_client_build_unknown_total " + clientBuildUnknownHelp + "\n# TYPE edge_client_build_unknown_total counter\nedge_client_build_unknown_total 2\n"
	if err := testutil.GatherAndCompare(s.registry, strings.NewReader(want), "edge_client_build_unknown_total"); err != nil {
		t.Errorf("the two pages naming zz: %v", err)
	}
	if n := strings.Count(logs.String(), "client_build=zz"); n != 1 {
		t.Errorf("the unknown build logged %d times, want once:\n%s", n, logs)
	}
}
