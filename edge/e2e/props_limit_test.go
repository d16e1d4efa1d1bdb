package e2e

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/logtest"
	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

// TestPropsLimitIsTheRenderers: the largest props a Go loader may hand a page come from the
// renderer's own max_request_mb, which it says when it answers: props within it render;
// props above it are the loader's error, named, never a call the renderer refuses; and a
// renderer that takes larger requests takes larger props.
func TestPropsLimitIsTheRenderers(t *testing.T) {
	for _, tt := range []struct {
		maxRequestMB string
		propsBytes   int
		want         int
	}{
		{"4", 2 << 20, http.StatusOK},                   // within three quarters of 4 MiB
		{"4", 3<<20 + 1, http.StatusServiceUnavailable}, // above them
		{"8", 3<<20 + 1, http.StatusOK},                 // within three quarters of 8 MiB
	} {
		socket := filepath.Join(t.TempDir(), "r.sock")
		startRenderer(t, socket, "SSR_RENDERER_MAX_REQUEST_MB="+tt.maxRequestMB)
		logs := &logtest.Buffer{}
		srv, err := ssr.New(ssr.Options{
			RendererAddress: "unix://" + socket, AssetsDir: assetsDir(), Logger: slog.New(slog.NewJSONHandler(logs, nil)),
			Timeouts: ssr.Timeouts{Render: 10 * time.Second, Hard: 20 * time.Second},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		page := srv.Page("home", ssr.PageOptions{Load: func(*http.Request) (ssr.Result, error) {
			return ssr.Result{Props: map[string]string{"blob": strings.Repeat("x", tt.propsBytes-len(`{"blob":""}`))}}, nil
		}})
		if err := srv.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		page.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != tt.want {
			t.Errorf("max_request_mb %s, props of %d bytes: got %d %s, want %d", tt.maxRequestMB, tt.propsBytes, rec.Code, rec.Header().Get("X-SSR-Fallback"), tt.want)
		}
		if tt.want != http.StatusOK && !strings.Contains(logs.String(), "three quarters of the renderer's max_request_mb") {
			t.Errorf("max_request_mb %s: the log does not name the limit:\n%.2000s", tt.maxRequestMB, logs.String())
		}
	}
}
