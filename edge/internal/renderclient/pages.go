package renderclient

import (
	"context"
	"math"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// Bundle is what the renderer's server bundle exports.
type Bundle struct {
	// Pages are its page names.
	Pages []string
	// ID is a hash of its file, which the edge's cache keys are made of.
	ID string
	// CanStream is whether it exports renderToPipeableStream, which a page that streams
	// needs.
	CanStream bool
	// CanPrerender is whether it exports prerenderToNodeStream and resumeToPipeableStream,
	// which a partially prerendered page needs.
	CanPrerender bool
	// Islands are the names of its `islands` export (RenderIslands).
	Islands []string
	// MaxRequestBytes is the largest request the renderer accepts (its max_request_mb).
	MaxRequestBytes int
	// NotFoundPage is the page its notFoundPage export names: "" without one.
	NotFoundPage string
	// Lang and DocumentHead are what it says of every document: its lang export (a
	// language tag) and its documentHead() rendered, trusted markup; "" without them.
	Lang, DocumentHead string
}

// ListPages returns what the renderer's bundle exports. It waits until the renderer is
// reachable and has loaded its bundle (the renderer answers UNAVAILABLE until a worker is
// warm, which is retried) or ctx ends.
func (c *Client) ListPages(ctx context.Context) (Bundle, error) {
	// No dial before the socket exists: failed dials put the connection in backoff (up to
	// MaxReconnectDelay), and the first renders after the renderer comes up would fail
	// fast instead of connecting.
	for c.socket != "" {
		if _, err := os.Stat(c.socket); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return Bundle{}, ctx.Err()
		case <-time.After(listPagesRetry):
		}
	}
	for {
		resp, err := c.rpc.ListPages(ctx, &ssrv1.ListPagesRequest{}, grpc.WaitForReady(true))
		if err == nil {
			return Bundle{Pages: resp.GetPages(), ID: resp.GetBundleId(), CanStream: resp.GetCanStream(), CanPrerender: resp.GetCanPrerender(), Islands: resp.GetIslands(),
				MaxRequestBytes: int(min(resp.GetMaxRequestBytes(), math.MaxInt32)), NotFoundPage: resp.GetNotFoundPage(),
				Lang: resp.GetLang(), DocumentHead: resp.GetDocumentHead()}, nil
		}
		if ctx.Err() != nil {
			return Bundle{}, ctx.Err()
		}
		if status.Code(err) != codes.Unavailable {
			return Bundle{}, err
		}
		select {
		case <-ctx.Done():
			return Bundle{}, ctx.Err()
		case <-time.After(listPagesRetry):
		}
	}
}

// listPagesRetry: workers warm up in about a second.
const listPagesRetry = 200 * time.Millisecond
