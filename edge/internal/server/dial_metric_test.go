package server

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
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
	// Each call drives a dial if the connection is idle.
	poll.Until(t, "3 failed dials counted", func() bool {
		if testutil.ToFloat64(m.dialFailures) >= 3 {
			return true
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		client.Render(ctx, &ssrv1.RenderRequest{Page: "p"})
		return false
	})
	if n, err := testutil.GatherAndCount(reg, "edge_renderer_dial_failures_total"); err != nil || n != 1 {
		t.Errorf("got %d series of edge_renderer_dial_failures_total (%v), want 1", n, err)
	}
}
