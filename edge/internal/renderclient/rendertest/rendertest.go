// Package rendertest serves a fake renderer's Render over the Channel the edge's client
// renders on, for tests that fake the renderer with a ssrv1.RenderServiceServer.
package rendertest

import (
	"context"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// ErrorTrailer is the trailer of a failed Render call in which the renderer puts its stable
// error code (ChannelError.code on a Channel).
const ErrorTrailer = "ssr-error"

// RendererTimeTrailer is the trailer of a successful Render call in which the renderer gives
// its time there, in microseconds (ChannelResponse.renderer_us on a Channel).
const RendererTimeTrailer = "ssr-renderer-us"

// PieceBytes is the size of the pieces a response larger than it is sent in.
const PieceBytes = 256 << 10

// Server is a fake renderer whose Channel answers each render with its own Render, in a
// goroutine of its own, as the renderer would: the error's status and the ssr-error its
// Render set as a trailer, or the response with the ssr-renderer-us trailer's time. A
// cancel message cancels the Render's context. Other parts are answered Unimplemented.
type Server struct {
	ssrv1.RenderServiceServer
}

// Channel serves the stream until the client ends it.
func (s Server) Channel(stream grpc.BidiStreamingServer[ssrv1.ChannelRequest, ssrv1.ChannelResponse]) error {
	var sendMu, mu sync.Mutex
	cancels := map[uint64]context.CancelFunc{}
	send := func(m *ssrv1.ChannelResponse) {
		sendMu.Lock()
		defer sendMu.Unlock()
		b, err := proto.Marshal(m)
		if err != nil || len(b) <= PieceBytes {
			_ = stream.Send(m)
			return
		}
		// As the renderer does: the client joins the pieces.
		for at := 0; at < len(b); at += PieceBytes {
			end := min(at+PieceBytes, len(b))
			_ = stream.Send(&ssrv1.ChannelResponse{Id: m.Id, Part: &ssrv1.ChannelResponse_Piece{Piece: b[at:end]}, LastPiece: end == len(b)})
		}
	}
	for {
		m, err := stream.Recv()
		if err != nil {
			mu.Lock()
			for _, cancel := range cancels {
				cancel()
			}
			mu.Unlock()
			return nil
		}
		id := m.GetId()
		if m.GetCancel() != nil {
			mu.Lock()
			if cancel := cancels[id]; cancel != nil {
				cancel()
			}
			mu.Unlock()
			continue
		}
		req := m.GetRender()
		if req == nil {
			send(failure(id, status.New(codes.Unimplemented, "rendertest serves render messages only"), ""))
			continue
		}
		ctx, cancel := context.WithCancel(stream.Context())
		if ms := m.GetDeadlineMs(); ms > 0 {
			ctx, cancel = context.WithTimeout(stream.Context(), msDuration(ms))
		}
		md := metadata.MD{}
		for k, v := range map[string]string{"x-request-id": m.GetRequestId(), "traceparent": m.GetTraceparent(), "tracestate": m.GetTracestate()} {
			if v != "" {
				md.Set(k, v)
			}
		}
		ctx = metadata.NewIncomingContext(ctx, md)
		mu.Lock()
		cancels[id] = cancel
		mu.Unlock()
		go func() {
			defer func() {
				mu.Lock()
				delete(cancels, id)
				mu.Unlock()
				cancel()
			}()
			trailer := &trailerStream{}
			resp, err := s.Render(grpc.NewContextWithServerTransportStream(ctx, trailer), req)
			if err != nil {
				send(failure(id, status.Convert(err), first(trailer.md, ErrorTrailer)))
				return
			}
			us, _ := strconv.ParseUint(first(trailer.md, RendererTimeTrailer), 10, 64)
			send(&ssrv1.ChannelResponse{Id: id, RendererUs: us, Part: &ssrv1.ChannelResponse_Rendered{Rendered: resp}})
		}()
	}
}

func failure(id uint64, st *status.Status, code string) *ssrv1.ChannelResponse {
	e := &ssrv1.ChannelError{Status: int32(st.Code()), Message: st.Message()}
	if v, ok := ssrv1.RenderErr_value[code]; ok {
		e.Code = ssrv1.RenderErr(v)
	}
	return &ssrv1.ChannelResponse{Id: id, Part: &ssrv1.ChannelResponse_Error{Error: e}}
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// trailerStream keeps what a Render sets with grpc.SetTrailer.
type trailerStream struct {
	mu sync.Mutex
	md metadata.MD
}

func (*trailerStream) Method() string               { return ssrv1.RenderService_Render_FullMethodName }
func (*trailerStream) SetHeader(metadata.MD) error  { return nil }
func (*trailerStream) SendHeader(metadata.MD) error { return nil }
func (t *trailerStream) SetTrailer(md metadata.MD) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.md = metadata.Join(t.md, md)
	return nil
}

func msDuration(ms uint32) time.Duration { return time.Duration(ms) * time.Millisecond }
