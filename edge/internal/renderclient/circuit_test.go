package renderclient

import (
	"context"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/renderclient/rendertest"
)

// failingRenderer answers every Render with one status and, if set, the renderer's code in
// the trailer, counting the calls that reach it.
type failingRenderer struct {
	ssrv1.UnimplementedRenderServiceServer
	code         codes.Code
	rendererCode string
	calls        atomic.Int32
}

func (f *failingRenderer) Render(ctx context.Context, _ *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
	f.calls.Add(1)
	if f.rendererCode != "" {
		grpc.SetTrailer(ctx, metadata.Pairs(rendertest.ErrorTrailer, f.rendererCode))
	}
	return nil, status.Error(f.code, "failed on purpose")
}

// TestCircuitOpensOnlyWhenUnreachable: only UNAVAILABLE without the renderer's code (nothing
// answered) opens the circuit; an answer, whatever it says, proves the renderer is there. A
// render whose worker died for another render beside it (ABORTED) is one such answer.
func TestCircuitOpensOnlyWhenUnreachable(t *testing.T) {
	tests := []struct {
		name         string
		code         codes.Code
		rendererCode string
		wantOpen     bool
	}{
		{"worker lost to a render beside it", codes.Aborted, "RENDER_ERR_WORKER_LOST", false},
		{"queue full", codes.ResourceExhausted, "RENDER_ERR_QUEUE_FULL", false},
		{"draining", codes.Unavailable, "RENDER_ERR_DRAINING", false},
		{"page threw", codes.Internal, "RENDER_ERR_PAGE_THREW", false},
		{"unreachable", codes.Unavailable, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			socket := filepath.Join(t.TempDir(), "r.sock")
			lis, err := net.Listen("unix", socket)
			if err != nil {
				t.Fatal(err)
			}
			fake := &failingRenderer{code: tt.code, rendererCode: tt.rendererCode}
			srv := grpc.NewServer()
			ssrv1.RegisterRenderServiceServer(srv, rendertest.Server{RenderServiceServer: fake})
			go srv.Serve(lis)
			t.Cleanup(srv.Stop)
			// Open for longer than the test runs: a refused call is the circuit's doing.
			c, err := New("unix://"+socket, Options{MaxReconnectDelay: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })

			const calls = 5
			var last error
			for range calls {
				_, last = c.Render(context.Background(), &ssrv1.RenderRequest{Page: "home"})
			}
			if got := status.Code(last); got != tt.code {
				t.Errorf("the last call failed with %v, want %v", got, tt.code)
			}
			reached, want := int(fake.calls.Load()), calls
			if tt.wantOpen {
				want = 3 // the circuit's threshold; then it refuses at once
			}
			if reached != want {
				t.Errorf("%d of %d calls reached the renderer, want %d", reached, calls, want)
			}
		})
	}
}
