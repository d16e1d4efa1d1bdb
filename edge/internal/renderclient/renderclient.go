// Package renderclient is the edge's gRPC client of the renderer sidecar (its codec and
// trailers: docs/architecture.md, "The wire format").
package renderclient

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/bits"
	"net"
	"sync"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/circuit"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// Options configure a Client. Zero values mean the defaults given.
type Options struct {
	// MaxPageBytes bounds a render response. If zero, defaults to 16 MiB.
	MaxPageBytes int
	// MaxReconnectDelay caps the reconnect backoff. If zero, defaults to 1s: the renderer is a
	// local socket, and grpc-go's 120s default would keep serving fallbacks long after it is back.
	MaxReconnectDelay time.Duration
	// Log receives the renderer's socket becoming unreachable (or served by another user,
	// which is refused) and reachable again: one line each, not one per dial. If nil,
	// defaults to slog.Default().
	Log *slog.Logger
	// OnDialFailure is called on every failed dial of a unix socket, for a metric. If nil,
	// failed dials are only logged, as Log says.
	OnDialFailure func()
}

// Client renders pages on the renderer.
type Client struct {
	conn         *grpc.ClientConn
	rpc          ssrv1.RenderServiceClient
	circuit      *circuit.Breaker
	socket       string // the unix socket's path; empty for a TCP target
	codec        codec
	maxPageBytes int

	chMu  sync.Mutex
	slots [channelCount]slot
}

// New creates a client for target, e.g. "unix:///run/ssr/renderer.sock" or "127.0.0.1:50051".
// It connects lazily and reconnects on its own.
func New(target string, opts Options) (*Client, error) {
	if opts.MaxPageBytes == 0 {
		opts.MaxPageBytes = 16 << 20
	}
	if opts.MaxReconnectDelay == 0 {
		opts.MaxReconnectDelay = time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	bo := backoff.DefaultConfig
	bo.BaseDelay = 50 * time.Millisecond
	bo.MaxDelay = opts.MaxReconnectDelay
	codec := newCodec(opts.MaxPageBytes)
	dialOpts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bo, MinConnectTimeout: time.Second}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(opts.MaxPageBytes), grpc.ForceCodecV2(codec)),
		// The HTTP/2 DATA frames a page arrives in (~12 of 16 KiB) are read into buffers of
		// this pool, which grpc-go's default clears on every Get (4 % of the edge's CPU under
		// load, bench/README.md); each is filled whole by the read.
		experimental.WithBufferPool(codec.joins),
		// A page is ~200 KB: with HTTP/2's 64 KB default windows it would take several
		// WINDOW_UPDATE round trips per response.
		grpc.WithInitialWindowSize(4 << 20),
		grpc.WithInitialConnWindowSize(16 << 20),
		// grpc-go's 32 KiB read buffer took ~6 reads per page (the edge made 10.7 read calls per
		// uncached request; 5.7 with this, and 0.9 → 0.74 ms of CPU: bench/README.md).
		grpc.WithReadBufferSize(256 << 10),
	}
	if path, ok := unixPath(target); ok {
		dials := &connLog{log: opts.Log, socket: path, onFailure: opts.OnDialFailure}
		dialOpts = append(dialOpts, grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			conn, err := dialOwnUser(ctx, path)
			dials.dialed(err)
			return conn, err
		}))
	}
	conn, err := grpc.NewClient(target, dialOpts...)
	if err != nil {
		return nil, err
	}
	socket, _ := unixPath(target)
	return &Client{
		conn: conn, rpc: ssrv1.NewRenderServiceClient(conn), circuit: &circuit.Breaker{OpenFor: opts.MaxReconnectDelay},
		socket: socket, codec: codec, maxPageBytes: opts.MaxPageBytes,
	}, nil
}

// codec is grpc-go's proto codec with its own buffers for unmarshaling. A response arrives
// as one buffer per HTTP/2 frame, which must be joined into one buffer for proto.Unmarshal.
// grpc-go's codec takes that buffer from mem.DefaultBufferPool (no dial option reaches it),
// whose tiers jump from 32 KiB to 1 MiB, and every pool grpc-go exports clears a buffer's
// whole capacity on each Get: a ~180 KB page cost a 1 MiB memclr, and still 256 KiB with a
// tier at every power of two (6 % of the edge's CPU under load). Here the tiers are powers of
// two and nothing is cleared: the join overwrites exactly the bytes Unmarshal reads, and
// proto.Unmarshal copies what it keeps. Forcing a codec makes calls send content-type
// application/grpc+proto: the same codec by name, and grpc-js accepts any application/grpc type.
type codec struct {
	encoding.CodecV2 // grpc-go's, for Name
	joins            *joinBuffers
}

func newCodec(maxMessageBytes int) codec {
	return codec{CodecV2: encoding.GetCodecV2(grpcproto.Name), joins: newJoinBuffers(maxMessageBytes)}
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	if in, ok := v.(*inbound); ok {
		return c.unmarshalInbound(data, in)
	}
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("proto: cannot unmarshal into %T", v)
	}
	if len(data) == 1 {
		return proto.Unmarshal(data[0].ReadOnlyData(), m)
	}
	buf := c.joins.get(data.Len())
	defer c.joins.put(buf)
	data.CopyTo(*buf)
	return proto.Unmarshal(*buf, m)
}

// Marshal encodes a request (a Go loader's props: ~38 KB for the shop's listing) into a
// buffer from the same uncleared tiers. grpc-go's codec takes it from mem.DefaultBufferPool,
// whose next tier above 32 KiB is 1 MiB, cleared on every Get: that memclr was 13 % of the
// shop's CPU under load (pprof). grpc-go returns the buffer to the pool once it is written.
func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("proto: cannot marshal %T", v)
	}
	// UseCachedSize reuses the size just computed; the message is not changed meanwhile.
	size := proto.Size(m)
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := proto.MarshalOptions{UseCachedSize: true}.Marshal(m)
		return mem.BufferSlice{mem.SliceBuffer(b)}, err
	}
	buf := c.joins.get(size)
	b, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend((*buf)[:0], m)
	if err != nil {
		c.joins.put(buf)
		return nil, err
	}
	*buf = b
	return mem.BufferSlice{mem.NewBuffer(buf, c.joins)}, nil
}

// joinBuffers pools byte slices in power-of-two tiers from 4 KiB up to the largest message,
// without clearing them between uses.
type joinBuffers struct{ tiers []sync.Pool }

const smallestJoinExp = 12

func newJoinBuffers(maxBytes int) *joinBuffers {
	return &joinBuffers{tiers: make([]sync.Pool, max(1, bits.Len(uint(maxBytes-1))-smallestJoinExp+1))}
}

func joinTier(n int) int { return max(0, bits.Len(uint(n-1))-smallestJoinExp) }

// get returns a slice of length n; its contents are whatever the last user left.
func (j *joinBuffers) get(n int) *[]byte {
	t := joinTier(n)
	if t < len(j.tiers) {
		if b, ok := j.tiers[t].Get().(*[]byte); ok {
			*b = (*b)[:n]
			return b
		}
	}
	b := make([]byte, n, 1<<(t+smallestJoinExp))
	return &b
}

func (j *joinBuffers) put(b *[]byte) {
	if t := joinTier(cap(*b)); t < len(j.tiers) && cap(*b) == 1<<(t+smallestJoinExp) {
		j.tiers[t].Put(b)
	}
}

// Get and Put make the tiers a mem.BufferPool, which grpc-go returns a sent request's
// buffer to.
func (j *joinBuffers) Get(n int) *[]byte { return j.get(n) }
func (j *joinBuffers) Put(b *[]byte)     { j.put(b) }

// Render asks the renderer for one page. ctx carries the hard timeout. A failure is an *Error.
//
// Every render goes as a message on one of the client's channels (channel.go). While the
// renderer is unreachable the circuit is open: renders fail at once with UNAVAILABLE, and
// one at a time probes whether it is back.
func (c *Client) Render(ctx context.Context, req *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
	resp, release, err := c.render(ctx, req, false)
	if release != nil {
		release()
	}
	return resp, err
}

// RenderBorrowed is Render, except that the response's Html and PropsJson borrow a pooled
// buffer: they may be read until release is called, which must then be, exactly once. On
// error there is nothing to release.
func (c *Client) RenderBorrowed(ctx context.Context, req *ssrv1.RenderRequest) (*ssrv1.RenderResponse, func(), error) {
	return c.render(ctx, req, true)
}

func (c *Client) render(ctx context.Context, req *ssrv1.RenderRequest, borrow bool) (*ssrv1.RenderResponse, func(), error) {
	in, err := c.exchange(ctx, &ssrv1.ChannelRequest{Part: &ssrv1.ChannelRequest_Render{Render: req}})
	if err != nil {
		return nil, nil, err
	}
	resp := new(ssrv1.RenderResponse)
	if in.field != responseRendered {
		err = in.decode(responseRendered, resp)
	} else if borrow {
		err = decodeBorrowing(in.part, resp)
	} else {
		err = proto.Unmarshal(in.part, resp)
	}
	if err != nil {
		in.release(c.codec.joins)
		return nil, nil, &Error{Status: status.Convert(err)}
	}
	if resp.Timing != nil {
		resp.Timing.RendererUs = in.rendererUs
	}
	if !borrow {
		in.release(c.codec.joins)
		return resp, nil, nil
	}
	return resp, func() { in.release(c.codec.joins) }, nil
}

// exchange sends a render that has one response and waits for it: a failure is an *Error.
func (c *Client) exchange(ctx context.Context, req *ssrv1.ChannelRequest) (inbound, error) {
	ex, err := c.startExchange(ctx, req)
	if err != nil {
		return inbound{}, err
	}
	in, err := ex.next(ctx)
	if err != nil {
		return inbound{}, err
	}
	if e := in.failure(); e != nil {
		in.release(c.codec.joins)
		return inbound{}, c.answered(e)
	}
	c.answered(nil)
	return in, nil
}

// RenderIslands asks the renderer for the islands of one page, all in one render. ctx
// carries the deadline. A failure of the whole render is an *Error, as Render's; one
// island's failure is its result's error.
func (c *Client) RenderIslands(ctx context.Context, req *ssrv1.RenderIslandsRequest) (*ssrv1.RenderIslandsResponse, error) {
	in, err := c.exchange(ctx, &ssrv1.ChannelRequest{Part: &ssrv1.ChannelRequest_Islands{Islands: req}})
	if err != nil {
		return nil, err
	}
	defer in.release(c.codec.joins)
	resp := new(ssrv1.RenderIslandsResponse)
	if err := in.decode(responseIslands, resp); err != nil {
		return nil, &Error{Status: status.Convert(err)}
	}
	return resp, nil
}

// Stream is a render of a page that streams, in progress.
type Stream struct {
	ctx  context.Context
	ex   *exchange
	stop func() bool // ends the watch on ctx
	done bool
}

// RenderStream asks the renderer for a page that streams: its messages come from Recv as
// the renderer produces them, and Send settles the request's pending deferred values; call
// CloseSend once none is left. ctx carries the hard timeout; cancelling it ends the render.
// Failures, from this call or from Recv, are *Error, as Render's.
//
// The result's type is the interface literal the server package's StreamRenderer names, so
// that a *Client is one; it is a *Stream.
func (c *Client) RenderStream(ctx context.Context, req *ssrv1.RenderStreamRequest) (interface {
	Recv() (*ssrv1.RenderStreamResponse, error)
	Send(*ssrv1.RenderStreamRequest) error
	CloseSend() error
}, error) {
	ex, err := c.startExchange(ctx, &ssrv1.ChannelRequest{Part: &ssrv1.ChannelRequest_Stream{Stream: req}})
	if err != nil {
		return nil, err
	}
	// A caller that stops reading and cancels ctx still ends the render on the renderer.
	return &Stream{ctx: ctx, ex: ex, stop: context.AfterFunc(ctx, ex.giveUp)}, nil
}

// Send sends one of the request's deferred values, settled. An error means the render has
// ended: Recv says how.
func (s *Stream) Send(m *ssrv1.RenderStreamRequest) error {
	if m.Settled == nil {
		return status.Error(codes.InvalidArgument, "RenderStream: a later message settles a deferred value")
	}
	return s.ex.sendSettled(m.Settled)
}

// CloseSend says that nothing more will be sent: the render needs nothing to end.
func (s *Stream) CloseSend() error { return nil }

// Recv returns the next message, or io.EOF after the last. The trailer's timing gets the
// renderer's time (Timing.renderer_us).
func (s *Stream) Recv() (*ssrv1.RenderStreamResponse, error) {
	if s.done {
		return nil, io.EOF
	}
	c := s.ex.client
	in, err := s.ex.next(s.ctx)
	if err != nil {
		s.end()
		return nil, err
	}
	defer in.release(c.codec.joins)
	if e := in.failure(); e != nil {
		s.end()
		return nil, c.answered(e)
	}
	m := new(ssrv1.RenderStreamResponse)
	if err := in.decode(responseStreamed, m); err != nil {
		s.end()
		s.ex.giveUp()
		return nil, &Error{Status: status.Convert(err)}
	}
	if t := m.GetTrailer().GetTiming(); t != nil {
		t.RendererUs = in.rendererUs
		s.end()
		c.answered(nil)
	}
	return m, nil
}

func (s *Stream) end() {
	s.done = true
	s.stop()
}

// answered records a render's answer in the circuit, and returns its error, if any.
func (c *Client) answered(e *Error) error {
	// Only a failure to reach the renderer opens the circuit; an answer, even an
	// error, proves it is there.
	c.circuit.Record(time.Now(), e != nil && e.Status.Code() == codes.Unavailable && e.RendererCode == "")
	if e == nil {
		return nil
	}
	return e
}

// failed makes a failure to start a render an *Error and records it in the circuit.
func (c *Client) failed(err error, code string) *Error {
	e := &Error{Status: status.Convert(err), RendererCode: code}
	c.circuit.Record(time.Now(), e.Status.Code() == codes.Unavailable && code == "")
	return e
}

// Close closes the channels and the connection.
func (c *Client) Close() error {
	c.chMu.Lock()
	for i := range c.slots {
		if o := c.slots[i].opening; o != nil {
			go func() {
				if <-o.done; o.ch != nil {
					o.ch.close()
				}
			}()
			c.slots[i].opening = nil
		}
	}
	c.chMu.Unlock()
	return c.conn.Close()
}

// errCircuitOpen is a call refused while the renderer is unreachable.
func errCircuitOpen() *Error {
	return &Error{Status: status.New(codes.Unavailable, "circuit open: the renderer was unreachable")}
}

// Error is a failed render.
type Error struct {
	Status *status.Status
	// RendererCode is the renderer's stable code (RENDER_ERR_*), empty when the failure did
	// not come from the renderer (connection refused, message too large, deadline in transit).
	RendererCode string
}

func (e *Error) Error() string {
	if e.RendererCode != "" {
		return e.RendererCode + ": " + e.Status.Message()
	}
	return e.Status.Code().String() + ": " + e.Status.Message()
}

// GRPCStatus lets status.Code and status.FromError see the renderer's status.
func (e *Error) GRPCStatus() *status.Status { return e.Status }
