package server

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/renderclient"
)

// TestRendererDialFailuresMetric: every failed dial of a renderclient wired to the metrics
// counts, though the log has one line for the outage.
func TestRendererDialFailuresMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	client, err := renderclient.New("unix://"+filepath.Join(t.TempDir(), "nobody.sock"), renderclient.Options{
		MaxReconnectDelay: 20 * time.Millisecond, OnDialFailure: m.RendererDialFailed, Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for deadline := time.Now().Add(10 * time.Second); testutil.ToFloat64(m.dialFailures) < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("got %v failed dials counted within 10s, want 3", testutil.ToFloat64(m.dialFailures))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		client.Render(ctx, &ssrv1.RenderRequest{Page: "p"})
		cancel()
		time.Sleep(5 * time.Millisecond)
	}
	if n, err := testutil.GatherAndCount(reg, "edge_renderer_dial_failures_total"); err != nil || n != 1 {
		t.Errorf("got %d series of edge_renderer_dial_failures_total (%v), want 1", n, err)
	}
}
