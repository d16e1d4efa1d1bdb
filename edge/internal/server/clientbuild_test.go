package server

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
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

// TestUnlinkedClientBuildTurnsReadinessFalse: readiness turns false once the client build
// the renderer's latest page named has gone unlinked for unlinkedFor, and true again once
// its pages name one the document links.
func TestUnlinkedClientBuildTurnsReadinessFalse(t *testing.T) {
	d := deps{
		shell: document.NewShell(&document.Manifest{BuildID: "b1"}), build: &builds{}, unknownBuilds: &sync.Map{},
		metrics: NewMetrics(prometheus.NewRegistry()), log: slog.New(slog.DiscardHandler),
	}
	if d.clientBuild("zz"); d.unlinked() != nil {
		t.Fatalf("unlinked at once: %v", d.unlinked())
	}
	d.unknownBuilds.Store("zz", time.Now().Add(-unlinkedFor)) // as if named that long ago
	if err := d.unlinked(); err == nil || !strings.Contains(err.Error(), `client build "zz"`) {
		t.Fatalf("after %s: %v, want an error naming zz", unlinkedFor, err)
	}
	if d.clientBuild("b1"); d.unlinked() != nil {
		t.Errorf("once pages name b1: %v", d.unlinked())
	}
}
