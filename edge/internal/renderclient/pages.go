package renderclient

import (
	"context"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// ListPages returns the page names of the renderer's bundle and the bundle's id. It waits
// until the renderer is reachable and has loaded its bundle (the renderer answers
// UNAVAILABLE until a worker is warm, which is retried) or ctx ends.
func (c *Client) ListPages(ctx context.Context) ([]string, string, error) {
	// No dial before the socket exists: failed dials put the connection in backoff (up to
	// MaxReconnectDelay), and the first renders after the renderer comes up would fail
	// fast instead of connecting.
	for c.socket != "" {
		if _, err := os.Stat(c.socket); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case <-time.After(listPagesRetry):
		}
	}
	for {
		resp, err := c.rpc.ListPages(ctx, &ssrv1.ListPagesRequest{}, grpc.WaitForReady(true))
		if err == nil {
			return resp.GetPages(), resp.GetBundleId(), nil
		}
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		if status.Code(err) != codes.Unavailable {
			return nil, "", err
		}
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case <-time.After(listPagesRetry):
		}
	}
}

// listPagesRetry: workers warm up in about a second.
const listPagesRetry = 200 * time.Millisecond
