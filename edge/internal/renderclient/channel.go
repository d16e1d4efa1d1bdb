package renderclient

import (
	"context"
	"errors"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// A channel is one Channel stream (render.proto) and the renders in flight on it: a render
// is a message with an id, not a call, so that HTTP/2 headers, metadata, a call's objects on
// both sides and its status trailers are paid per channel. One goroutine reads the channel
// and hands each response to its render's exchange, never waiting on it; the caller's
// goroutine decodes it. Sends are serialised on the stream (grpc-go allows one SendMsg at a
// time).
type channel struct {
	client *Client
	stream grpc.ClientStream
	end    context.CancelFunc

	sendMu sync.Mutex

	mu       sync.Mutex
	renders  map[uint64]*exchange
	nextID   uint64
	broken   bool
	inFlight atomic.Int32 // len(renders), read without mu to pick a channel
}

// channelDesc is Channel's stream, for conn.NewStream.
var channelDesc = &grpc.StreamDesc{StreamName: "Channel", ServerStreams: true, ClientStreams: true}

// openChannel opens a Channel stream and starts reading it. A response comes whole or in
// pieces (the renderer's choice: render.proto, ChannelResponse.piece), either way held to
// the largest page.
func (c *Client) openChannel() (*channel, error) {
	ctx, end := context.WithCancel(context.Background())
	stream, err := c.conn.NewStream(ctx, channelDesc, ssrv1.RenderService_Channel_FullMethodName,
		grpc.MaxCallRecvMsgSize(c.maxPageBytes+maxFrameFields), grpc.StaticMethod())
	if err != nil {
		end()
		return nil, err
	}
	ch := &channel{client: c, stream: stream, end: end, renders: make(map[uint64]*exchange)}
	go ch.read()
	return ch, nil
}

// maxFrameFields bounds a ChannelResponse's fields around its part: id, renderer_us,
// last_piece and the part's tag and length.
const maxFrameFields = 64

// start registers ex on the channel under a new id and sends its request. An error means
// the channel is broken: ex is not registered.
func (ch *channel) start(ex *exchange) error {
	ch.mu.Lock()
	if ch.broken {
		ch.mu.Unlock()
		return errChannelBroken
	}
	ch.nextID++
	id := ch.nextID
	// Named before it is registered: a channel that breaks from now on finds it its own.
	ex.mu.Lock()
	ex.ch, ex.id = ch, id
	ex.mu.Unlock()
	ch.renders[id] = ex
	ch.inFlight.Add(1)
	ch.mu.Unlock()
	ex.req.Id = id
	if err := ch.send(ex.req); err != nil {
		ch.forget(id)
		return err
	}
	return nil
}

var errChannelBroken = errors.New("renderer channel broken")

// send sends one message; an error means the channel is broken (read says how).
func (ch *channel) send(m *ssrv1.ChannelRequest) error {
	ch.sendMu.Lock()
	defer ch.sendMu.Unlock()
	return ch.stream.SendMsg(m)
}

// forget removes a render that needs nothing more from the channel.
func (ch *channel) forget(id uint64) {
	ch.mu.Lock()
	if _, ok := ch.renders[id]; ok {
		delete(ch.renders, id)
		ch.inFlight.Add(-1)
	}
	ch.mu.Unlock()
}

// read hands each response to its render until the stream ends, then fails the renders
// left: the renderer went away, or ended the channel as it shut down.
func (ch *channel) read() {
	var assembling map[uint64]*[]byte // pieces received so far, by render
	joins := ch.client.codec.joins
	for {
		in := new(inbound)
		err := ch.stream.RecvMsg(in)
		if err != nil {
			for _, b := range assembling {
				joins.put(b)
			}
			ch.fail(err)
			return
		}
		if in.piece != nil {
			whole, done, err := assemble(joins, assembling, in, ch.client.maxPageBytes)
			if assembling == nil {
				assembling = make(map[uint64]*[]byte)
			}
			if err != nil {
				ch.deliver(in.id, inbound{id: in.id, err: err})
				delete(assembling, in.id)
				continue
			}
			if !done {
				assembling[in.id] = whole
				continue
			}
			delete(assembling, in.id)
			in = new(inbound)
			if err := in.parse(*whole); err != nil || in.piece != nil {
				joins.put(whole)
				ch.fail(status.Error(codes.Internal, "renderer sent a malformed channel response"))
				return
			}
			in.buf = whole
		}
		ch.deliver(in.id, *in)
	}
}

// assemble appends a piece to its render's response so far: done once the last is in,
// and an error once it is larger than max.
func assemble(joins *joinBuffers, assembling map[uint64]*[]byte, in *inbound, max int) (*[]byte, bool, error) {
	defer in.release(joins)
	whole := assembling[in.id]
	n := len(in.piece)
	if whole != nil {
		n += len(*whole)
	}
	if n > max+maxFrameFields {
		if whole != nil {
			joins.put(whole)
		}
		return nil, false, status.Errorf(codes.ResourceExhausted, "renderer response larger than max (over %d bytes)", max)
	}
	grown := joins.get(n)
	if whole != nil {
		copy(*grown, *whole)
		if grown != whole {
			joins.put(whole)
		}
	}
	copy((*grown)[n-len(in.piece):], in.piece)
	return grown, in.lastPiece, nil
}

// deliver hands a response to its render; one for a render that has given up is dropped.
func (ch *channel) deliver(id uint64, in inbound) {
	ch.mu.Lock()
	ex := ch.renders[id]
	if ex != nil && in.ends() {
		delete(ch.renders, id)
		ch.inFlight.Add(-1)
	}
	ch.mu.Unlock()
	if ex == nil || !ex.put(in) {
		in.release(ch.client.codec.joins)
	}
}

// fail marks the channel broken, so that no render starts on it, and fails those left on it.
func (ch *channel) fail(err error) {
	ch.mu.Lock()
	ch.broken = true
	renders := ch.renders
	ch.renders = nil
	ch.inFlight.Store(0)
	ch.mu.Unlock()
	ch.end()
	ch.client.dropChannel(ch)
	if err == io.EOF {
		err = status.Error(codes.Unavailable, "the renderer ended the channel")
	}
	for _, ex := range renders {
		ex.brokenUnder(ch, err)
	}
}

// close ends the channel from this side.
func (ch *channel) close() {
	ch.sendMu.Lock()
	_ = ch.stream.CloseSend()
	ch.sendMu.Unlock()
	ch.end()
}

// channelCount is how many channels a Client keeps: a render goes on the one with the fewest
// in flight, so that a slow large reply on one (held to its pieces' turns) leaves the others.
const channelCount = 4

// A slot holds one of the client's channels: nil while none is open or opening.
type slot struct{ opening *opening }

// opening is a channel being opened, or open once done is closed (ch, or the error).
type opening struct {
	done chan struct{}
	ch   *channel
	err  error
}

// pick returns the channel with the fewest renders in flight, other than not, opening one in
// an empty slot. It waits for an opening no longer than ctx: the opening itself, which may
// wait for the connection, goes on for the renders after.
func (c *Client) pick(ctx context.Context, not *channel) (*channel, error) {
	c.chMu.Lock()
	var best *slot
	var bestLoad int32
	for i := range c.slots {
		s := &c.slots[i]
		var load int32
		if o := s.opening; o != nil && o.ch != nil {
			if o.ch == not {
				continue
			}
			load = o.ch.inFlight.Load()
		}
		if best == nil || load < bestLoad {
			best, bestLoad = s, load
		}
	}
	if best == nil {
		c.chMu.Unlock()
		return nil, errChannelBroken
	}
	o := best.opening
	if o == nil {
		o = &opening{done: make(chan struct{})}
		best.opening = o
		go c.open(best, o)
	}
	c.chMu.Unlock()
	select {
	case <-o.done:
		return o.ch, o.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// open opens a channel for slot s; a failed opening empties the slot again.
func (c *Client) open(s *slot, o *opening) {
	ch, err := c.openChannel()
	c.chMu.Lock()
	o.ch, o.err = ch, err
	if err != nil && s.opening == o {
		s.opening = nil
	}
	c.chMu.Unlock()
	close(o.done)
}

// dropChannel empties a broken channel's slot, for a new one.
func (c *Client) dropChannel(ch *channel) {
	c.chMu.Lock()
	defer c.chMu.Unlock()
	for i := range c.slots {
		if o := c.slots[i].opening; o != nil && o.ch == ch {
			c.slots[i].opening = nil
		}
	}
}

// exchange is one render on a channel: its request, and the responses the channel's reader
// has handed it and its caller has not taken yet.
type exchange struct {
	client *Client
	req    *ssrv1.ChannelRequest // the render's first message, kept to try it again

	mu       sync.Mutex
	ch       *channel
	id       uint64
	replies  []inbound
	received bool // a response came: the render cannot be tried again
	retried  bool
	gaveUp   bool
	broken   error // the channel broke under the render
	wake     chan struct{}
	// settled are the deferred values sent so far, sent again with a retry.
	settled []*ssrv1.Deferred
}

// startExchange starts a render on a channel: req's part is set, Id is not.
func (c *Client) startExchange(ctx context.Context, req *ssrv1.ChannelRequest) (*exchange, error) {
	if !c.circuit.Allow(time.Now()) {
		return nil, errCircuitOpen()
	}
	withCallContext(ctx, req)
	ex := &exchange{client: c, req: req, wake: make(chan struct{}, 1)}
	var not *channel
	for try := 0; ; try++ {
		ch, err := c.pick(ctx, not)
		if err == nil {
			if err = ch.start(ex); err == nil {
				return ex, nil
			}
		}
		if ctx.Err() != nil {
			return nil, &Error{Status: status.FromContextError(ctx.Err())}
		}
		// A channel broken between its pick and the send: try once more, on another.
		if try == 1 || ch == nil {
			return nil, c.failed(err, "")
		}
		not = ch
	}
}

// put queues a response; false when the render has given up (the caller releases it).
func (ex *exchange) put(in inbound) bool {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.gaveUp {
		return false
	}
	ex.replies = append(ex.replies, in)
	ex.received = true
	ex.signal()
	return true
}

func (ex *exchange) signal() {
	select {
	case ex.wake <- struct{}{}:
	default:
	}
}

// brokenUnder tells the render that ch broke under it.
func (ex *exchange) brokenUnder(ch *channel, err error) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.ch == ch && ex.broken == nil {
		ex.broken = err
		ex.signal()
	}
}

// next returns the render's next response, waiting for it until ctx is done. A channel
// broken under a render that has had no response yet is survived once: the render is sent
// again on another channel. A response ends the render when in.ends(); after that, next
// must not be called.
func (ex *exchange) next(ctx context.Context) (inbound, error) {
	for {
		ex.mu.Lock()
		if len(ex.replies) > 0 {
			in := ex.replies[0]
			ex.replies = ex.replies[1:]
			ex.mu.Unlock()
			return in, nil
		}
		if broken := ex.broken; broken != nil {
			retry := !ex.received && !ex.retried
			ex.retried = true
			ex.broken = nil
			lost := ex.ch
			ex.mu.Unlock()
			if retry && ex.retry(ctx, lost) == nil {
				continue
			}
			ex.client.circuit.Record(time.Now(), true)
			return inbound{}, &Error{Status: status.New(codes.Unavailable, "renderer channel broke during the render: "+status.Convert(broken).Message())}
		}
		ex.mu.Unlock()
		select {
		case <-ex.wake:
		case <-ctx.Done():
			ex.giveUp()
			return inbound{}, &Error{Status: status.FromContextError(ctx.Err())}
		}
	}
}

// retry sends the render, and the deferred values settled so far, on another channel.
func (ex *exchange) retry(ctx context.Context, not *channel) error {
	ch, err := ex.client.pick(ctx, not)
	if err != nil {
		return err
	}
	if err := ch.start(ex); err != nil {
		return err
	}
	ex.mu.Lock()
	settled, id := ex.settled, ex.id
	ex.mu.Unlock()
	for _, d := range settled {
		if err := ch.send(&ssrv1.ChannelRequest{Id: id, Part: &ssrv1.ChannelRequest_Settled{Settled: d}}); err != nil {
			return nil // the channel broke again: next sees it
		}
	}
	return nil
}

// giveUp ends the render from the caller's side: the renderer is told to abort it, and what
// came or comes for it is released.
func (ex *exchange) giveUp() {
	ex.mu.Lock()
	if ex.gaveUp {
		ex.mu.Unlock()
		return
	}
	ex.gaveUp = true
	ch, id, replies := ex.ch, ex.id, ex.replies
	ex.replies = nil
	ex.mu.Unlock()
	for _, in := range replies {
		in.release(ex.client.codec.joins)
	}
	ch.mu.Lock()
	_, inFlight := ch.renders[id]
	ch.mu.Unlock()
	if !inFlight {
		return
	}
	ch.forget(id)
	// Not on the caller's goroutine: a send may wait for the stream's flow control.
	go func() {
		_ = ch.send(&ssrv1.ChannelRequest{Id: id, Part: &ssrv1.ChannelRequest_Cancel{Cancel: &ssrv1.ChannelCancel{}}})
	}()
}

// sendSettled sends one of a streaming render's deferred values, settled.
func (ex *exchange) sendSettled(d *ssrv1.Deferred) error {
	ex.mu.Lock()
	ch, id := ex.ch, ex.id
	ex.settled = append(ex.settled, d)
	ex.mu.Unlock()
	return ch.send(&ssrv1.ChannelRequest{Id: id, Part: &ssrv1.ChannelRequest_Settled{Settled: d}})
}

// withCallContext puts in req what a call would have carried as its deadline and metadata:
// ctx's time left, and the request id and trace context its outgoing metadata holds.
func withCallContext(ctx context.Context, req *ssrv1.ChannelRequest) {
	if d, ok := ctx.Deadline(); ok {
		ms := (time.Until(d) + time.Millisecond - 1) / time.Millisecond
		req.DeadlineMs = uint32(max(1, min(ms, math.MaxUint32)))
	}
	md, ok := metadata.FromOutgoingContext(ctx)
	if !ok {
		return
	}
	req.RequestId = first(md, "x-request-id")
	req.Traceparent = first(md, "traceparent")
	req.Tracestate = first(md, "tracestate")
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}
