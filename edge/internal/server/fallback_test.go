package server

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/renderclient"
)

func TestReasonFor(t *testing.T) {
	renderer := func(code codes.Code, rendererCode string) error {
		return &renderclient.Error{Status: status.New(code, "x"), RendererCode: rendererCode}
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"no render slot", errShed, ReasonOverloaded},
		{"the Go loader failed", &LoadError{Err: errors.New("db down")}, ReasonLoadError},
		{"the hard timeout, before the call", fmt.Errorf("call: %w", context.DeadlineExceeded), ReasonDeadline},
		{"anything else", errors.New("?"), ReasonRenderError},
		{"renderer unreachable", renderer(codes.Unavailable, ""), ReasonUnavailable},
		{"renderer draining", renderer(codes.Unavailable, "RENDER_ERR_DRAINING"), ReasonUnavailable},
		{"call cancelled in transit", renderer(codes.Canceled, ""), ReasonUnavailable},
		{"the hard timeout", renderer(codes.DeadlineExceeded, "RENDER_ERR_DEADLINE"), ReasonDeadline},
		{"the renderer's queue full", renderer(codes.ResourceExhausted, "RENDER_ERR_QUEUE_FULL"), ReasonOverloaded},
		{"a reply over max_page_mb on the wire", renderer(codes.ResourceExhausted, ""), ReasonTooLarge},
		{"a page refused as too large in the worker", renderer(codes.ResourceExhausted, "RENDER_ERR_PAGE_TOO_LARGE"), ReasonTooLarge},
		{"quarantined", renderer(codes.FailedPrecondition, "RENDER_ERR_QUARANTINED"), ReasonQuarantined},
		{"unknown page", renderer(codes.NotFound, "RENDER_ERR_PAGE_NOT_FOUND"), ReasonUnknownPage},
		{"bad arguments", renderer(codes.InvalidArgument, "RENDER_ERR_INVALID_PROPS"), ReasonBadRequest},
		{"the page threw", renderer(codes.Internal, "RENDER_ERR_PAGE_THREW"), ReasonRenderError},
		{"its worker died for a render beside it", renderer(codes.Aborted, "RENDER_ERR_WORKER_LOST"), ReasonWorkerLost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reasonFor(tt.err); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
