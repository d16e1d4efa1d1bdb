package renderclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// channelServer is a renderer whose Channel each test writes: serve runs once per channel
// the client opens, with the channel's number (from 1).
type channelServer struct {
	ssrv1.UnimplementedRenderServiceServer
	mu     sync.Mutex
	opened int
	serve  func(n int, stream grpc.BidiStreamingServer[ssrv1.ChannelRequest, ssrv1.ChannelResponse]) error
}

func (s *channelServer) Channel(stream grpc.BidiStreamingServer[ssrv1.ChannelRequest, ssrv1.ChannelResponse]) error {
	s.mu.Lock()
	s.opened++
	n := s.opened
	s.mu.Unlock()
	return s.serve(n, stream)
}

// serve starts srv on a temp unix socket, and a client of it.
func serve(t *testing.T, srv ssrv1.RenderServiceServer) *Client {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "r.sock")
	lis, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	ssrv1.RegisterRenderServiceServer(g, srv)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	c, err := New("unix://"+socket, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func rendered(id uint64, html string) *ssrv1.ChannelResponse {
	return &ssrv1.ChannelResponse{Id: id, RendererUs: 7, Part: &ssrv1.ChannelResponse_Rendered{Rendered: &ssrv1.RenderResponse{
		Status: 200, Html: []byte(html), Timing: &ssrv1.Timing{}}}}
}

func streamed(id uint64, m *ssrv1.RenderStreamResponse) *ssrv1.ChannelResponse {
	return &ssrv1.ChannelResponse{Id: id, Part: &ssrv1.ChannelResponse_Streamed{Streamed: m}}
}

// TestBrokenChannel: a channel that breaks under a render that has had no response yet costs
// it nothing (it is sent again on another channel); one that had begun fails with
// UNAVAILABLE, which the edge answers with the browser shell (renderer-unavailable).
func TestBrokenChannel(t *testing.T) {
	heads := make(chan struct{})
	c := serve(t, &channelServer{serve: func(n int, stream grpc.BidiStreamingServer[ssrv1.ChannelRequest, ssrv1.ChannelResponse]) error {
		for {
			m, err := stream.Recv()
			if err != nil {
				return nil
			}
			switch {
			case n == 1 && m.GetRender() != nil:
				return status.Error(codes.Internal, "the first channel breaks before answering")
			case m.GetRender() != nil:
				stream.Send(rendered(m.Id, "<p>"+m.GetRender().Url+"</p>"))
			case m.GetStream() != nil:
				stream.Send(streamed(m.Id, &ssrv1.RenderStreamResponse{Part: &ssrv1.RenderStreamResponse_Head{Head: &ssrv1.RenderResponse{Status: 200}}}))
				<-heads
				return status.Error(codes.Internal, "this channel breaks after a head")
			}
		}
	}})
	ctx := context.Background()
	resp, err := c.Render(ctx, &ssrv1.RenderRequest{Page: "home", Url: "/retried"})
	if err != nil || string(resp.Html) != "<p>/retried</p>" || resp.Timing.RendererUs != 7 {
		t.Fatalf("a render the broken channel had not answered: %v, %v; want it tried again on another", resp, err)
	}

	s, err := c.RenderStream(ctx, &ssrv1.RenderStreamRequest{Render: &ssrv1.RenderRequest{Page: "home", Url: "/begun"}})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := s.Recv(); err != nil || m.GetHead() == nil {
		t.Fatalf("first message: %v, %v; want the head", m, err)
	}
	close(heads)
	_, err = s.Recv()
	if code := status.Code(err); code != codes.Unavailable {
		t.Fatalf("after the channel broke: %v (%v), want UNAVAILABLE", err, code)
	}
	// And the client goes on, on channels of its own.
	if _, err := c.Render(ctx, &ssrv1.RenderRequest{Page: "home", Url: "/after"}); err != nil {
		t.Fatal(err)
	}
}

// TestDeadlineAndAbortInBand: a render's deadline, request id and trace context go in its
// message; a caller that gives up sends its cancel, and gets its own context's error at once.
func TestDeadlineAndAbortInBand(t *testing.T) {
	got := make(chan *ssrv1.ChannelRequest, 10)
	c := serve(t, &channelServer{serve: func(_ int, stream grpc.BidiStreamingServer[ssrv1.ChannelRequest, ssrv1.ChannelResponse]) error {
		for {
			m, err := stream.Recv()
			if err != nil {
				return nil
			}
			got <- m
			if m.GetCancel() != nil {
				// The renderer still answers a cancelled render: the client has forgotten it.
				stream.Send(&ssrv1.ChannelResponse{Id: m.Id, Part: &ssrv1.ChannelResponse_Error{Error: &ssrv1.ChannelError{
					Status: int32(codes.Canceled), Code: ssrv1.RenderErr_RENDER_ERR_CANCELLED}}})
			}
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	ctx = metadata.AppendToOutgoingContext(ctx, "x-request-id", "req-7", "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-01426d6797a8dc5e-01")
	done := make(chan error, 1)
	go func() {
		_, err := c.Render(ctx, &ssrv1.RenderRequest{Page: "home", Url: "/"})
		done <- err
	}()
	m := <-got
	if m.DeadlineMs < 59*60*1000 || m.DeadlineMs > 60*60*1000 {
		t.Errorf("deadline_ms = %d, want the hour left", m.DeadlineMs)
	}
	if m.RequestId != "req-7" || m.Traceparent == "" {
		t.Errorf("request id %q, traceparent %q: want the outgoing metadata's", m.RequestId, m.Traceparent)
	}
	cancel()
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Errorf("cancelled render: %v, want CANCELLED", err)
	}
	if c := <-got; c.GetCancel() == nil || c.Id != m.Id {
		t.Errorf("after the caller gave up the renderer got %v, want a cancel of render %d", c, m.Id)
	}
}

// TestLargePageBesideSmallOnOneChannel: the pieces of a large page and a small page's whole
// response, interleaved on one channel, each reach their own render byte for byte.
func TestLargePageBesideSmallOnOneChannel(t *testing.T) {
	large := bytes.Repeat([]byte("L"), 3<<20)
	c := serve(t, &channelServer{serve: func(_ int, stream grpc.BidiStreamingServer[ssrv1.ChannelRequest, ssrv1.ChannelResponse]) error {
		var ids []uint64
		for len(ids) < 2 {
			m, err := stream.Recv()
			if err != nil {
				return nil
			}
			ids = append(ids, m.Id)
		}
		whole, _ := proto.Marshal(&ssrv1.ChannelResponse{Id: ids[0], Part: &ssrv1.ChannelResponse_Rendered{Rendered: &ssrv1.RenderResponse{Status: 200, Html: large}}})
		const piece = 256 << 10
		for at := 0; at < len(whole); at += piece {
			end := min(at+piece, len(whole))
			stream.Send(&ssrv1.ChannelResponse{Id: ids[0], Part: &ssrv1.ChannelResponse_Piece{Piece: whole[at:end]}, LastPiece: end == len(whole)})
			if at == piece {
				stream.Send(rendered(ids[1], "small"))
			}
		}
		<-stream.Context().Done()
		return nil
	}})
	// One channel carries both: the client puts a render on the one with fewest in flight,
	// so the first channel is taken, and then held busy by the fake.
	ch, err := c.openChannel()
	if err != nil {
		t.Fatal(err)
	}
	o := &opening{done: make(chan struct{}), ch: ch}
	close(o.done)
	c.chMu.Lock()
	for i := range c.slots {
		c.slots[i].opening = o
	}
	c.chMu.Unlock()
	var wg sync.WaitGroup
	results := make([][]byte, 2)
	for i, url := range []string{"/large", "/small"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, release, err := c.RenderBorrowed(context.Background(), &ssrv1.RenderRequest{Page: "p", Url: url})
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = bytes.Clone(resp.Html)
			release()
		}()
		// The fake answers the renders in the order they came.
		poll.Until(t, "the render in flight", func() bool { return ch.inFlight.Load() >= int32(i+1) })
	}
	wg.Wait()
	if !bytes.Equal(results[0], large) || string(results[1]) != "small" {
		t.Fatalf("large page %d bytes (want %d, intact), small %q", len(results[0]), len(large), results[1])
	}
}

// TestStreamEndsAtItsTrailer: a streamed render's messages come in order, the trailer with
// the renderer's time, then io.EOF.
func TestStreamEndsAtItsTrailer(t *testing.T) {
	c := serve(t, &channelServer{serve: func(_ int, stream grpc.BidiStreamingServer[ssrv1.ChannelRequest, ssrv1.ChannelResponse]) error {
		for {
			m, err := stream.Recv()
			if err != nil {
				return nil
			}
			if m.GetStream() == nil {
				continue
			}
			stream.Send(streamed(m.Id, &ssrv1.RenderStreamResponse{Part: &ssrv1.RenderStreamResponse_Head{Head: &ssrv1.RenderResponse{Status: 200}}}))
			stream.Send(streamed(m.Id, &ssrv1.RenderStreamResponse{Part: &ssrv1.RenderStreamResponse_Html{Html: []byte("<p>")}}))
			end := streamed(m.Id, &ssrv1.RenderStreamResponse{Part: &ssrv1.RenderStreamResponse_Trailer{Trailer: &ssrv1.RenderStreamTrailer{Timing: &ssrv1.Timing{}}}})
			end.RendererUs = 42
			stream.Send(end)
		}
	}})
	s, err := c.RenderStream(context.Background(), &ssrv1.RenderStreamRequest{Render: &ssrv1.RenderRequest{Page: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case m.GetHead() != nil:
			kinds = append(kinds, "head")
		case m.GetHtml() != nil:
			kinds = append(kinds, "html")
		case m.GetTrailer() != nil:
			kinds = append(kinds, "trailer")
			if us := m.GetTrailer().GetTiming().GetRendererUs(); us != 42 {
				t.Errorf("renderer_us = %d, want 42", us)
			}
		}
	}
	if got := kinds; len(got) != 3 || got[0] != "head" || got[1] != "html" || got[2] != "trailer" {
		t.Fatalf("messages %v", got)
	}
}
