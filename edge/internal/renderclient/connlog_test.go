package renderclient

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/logtest"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/renderclient/rendertest"
)

type okRenderer struct {
	ssrv1.UnimplementedRenderServiceServer
}

func (okRenderer) Render(context.Context, *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
	return &ssrv1.RenderResponse{Status: 200}, nil
}

// TestDialFailuresLogTransitions: while the renderer is down the client redials about once
// a second; the log says when that starts and when it ends, and the metric counts each dial.
func TestDialFailuresLogTransitions(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "r.sock")
	var logs logtest.Buffer
	var failures atomic.Int64
	c, err := New("unix://"+sock, Options{
		MaxReconnectDelay: 20 * time.Millisecond,
		Log:               slog.New(slog.NewTextHandler(&logs, nil)),
		OnDialFailure:     func() { failures.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// call drives a dial if the connection is idle; the circuit may refuse it, which is fine.
	call := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c.Render(ctx, &ssrv1.RenderRequest{Page: "p"})
	}
	// dialUntil calls until done holds: nothing dials a connection nobody uses.
	dialUntil := func(what string, done func() bool) {
		t.Helper()
		poll.Until(t, what, func() bool {
			if done() {
				return true
			}
			call()
			return false
		})
	}
	defer func() { // what the client logged, for a failure
		if t.Failed() {
			t.Logf("logged:\n%s", logs.String())
		}
	}()
	check := func(stage string, wantWarn, wantInfo int) {
		t.Helper()
		if got := logs.Lines("WARN"); len(got) != wantWarn {
			t.Errorf("%s: got %d WARN lines, want %d:\n%s", stage, len(got), wantWarn, strings.Join(got, ""))
		}
		if got := logs.Lines("INFO"); len(got) != wantInfo {
			t.Errorf("%s: got %d INFO lines, want %d:\n%s", stage, len(got), wantInfo, strings.Join(got, ""))
		}
	}

	dialUntil("3 failed dials", func() bool { return failures.Load() >= 3 })
	check("nobody listening", 1, 0)
	if warn := logs.Lines("WARN"); len(warn) > 0 && (!strings.Contains(warn[0], "socket="+sock) || !strings.Contains(warn[0], "err=")) {
		t.Errorf("got %q, want the socket and the error", warn[0])
	}

	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	ssrv1.RegisterRenderServiceServer(g, rendertest.Server{RenderServiceServer: okRenderer{}})
	go g.Serve(lis)
	dialUntil("reconnection", func() bool { return len(logs.Lines("INFO")) > 0 })
	check("listening", 1, 1)
	if info := logs.Lines("INFO"); len(info) > 0 {
		want := "failed_dials=" + strconv.FormatInt(failures.Load(), 10)
		if !strings.Contains(info[0], want) || !strings.Contains(info[0], "down=") || !strings.Contains(info[0], "socket="+sock) {
			t.Errorf("got %q, want the socket, down= and %s", info[0], want)
		}
	}

	g.Stop() // closes the listener, which removes the socket
	before := failures.Load()
	dialUntil("failed dials after the renderer went away", func() bool { return failures.Load() >= before+3 })
	check("gone again", 2, 1)
}
