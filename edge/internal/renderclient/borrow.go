package renderclient

import (
	"context"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// A borrowed response's HTML and props point into the pooled buffer it was received in.
// proto.Unmarshal copies every bytes field into an allocation of its own: ~180 KB a page,
// 90 % of the bytes the edge allocated under load, and what set the pace of its garbage
// collections (bench/README.md, "Edge CPU profile"). The caller gives the buffer back once
// nothing reads the response. Built with the race detector, a released buffer is
// overwritten first, so that a read after its release shows as a corrupted page.

// borrowedReply is the reply RenderBorrowed hands grpc-go: the codec decodes into resp and
// keeps the buffer resp borrows.
type borrowedReply struct {
	resp  *ssrv1.RenderResponse
	buf   *[]byte
	joins *joinBuffers
}

// release gives the buffer back; once only, and a no-op if none was taken.
func (r *borrowedReply) release() {
	if r.buf == nil {
		return
	}
	if poisonReleased {
		for i := range *r.buf {
			(*r.buf)[i] = 0xdd
		}
	}
	r.joins.put(r.buf)
	r.buf = nil
}

// RenderBorrowed is Render, except that the response's Html and PropsJson borrow a pooled
// buffer: they may be read until release is called, which must then be, exactly once. On
// error there is nothing to release.
func (c *Client) RenderBorrowed(ctx context.Context, req *ssrv1.RenderRequest) (*ssrv1.RenderResponse, func(), error) {
	reply := &borrowedReply{resp: new(ssrv1.RenderResponse)}
	if err := c.invoke(ctx, req, reply, reply.resp); err != nil {
		reply.release()
		return nil, nil, err
	}
	return reply.resp, reply.release, nil
}

// unmarshalBorrowed joins data into a pooled buffer and decodes it into r, borrowing.
func (c codec) unmarshalBorrowed(data mem.BufferSlice, r *borrowedReply) error {
	r.release() // a second message, which grpc-go then refuses, replaces the first
	buf := c.joins.get(data.Len())
	data.CopyTo(*buf)
	if err := decodeBorrowing(*buf, r.resp); err != nil {
		c.joins.put(buf)
		return err
	}
	r.buf, r.joins = buf, c.joins
	return nil
}

// The fields a borrowed response points into its buffer for; all others are small.
var (
	htmlField  = fieldNumber("html")
	propsField = fieldNumber("props_json")
)

func fieldNumber(name string) protowire.Number {
	return (*ssrv1.RenderResponse)(nil).ProtoReflect().Descriptor().Fields().ByName(protoreflect.Name(name)).Number()
}

// decodeBorrowing is proto.Unmarshal(b, m), except that m.Html and m.PropsJson are slices of
// b (capped, so that an append copies): the other fields, a few hundred bytes, are copied out
// and unmarshaled as usual. As in proto.Unmarshal, the last occurrence of a field wins.
func decodeBorrowing(b []byte, m *ssrv1.RenderResponse) error {
	var html, props, rest []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		size := protowire.ConsumeFieldValue(num, typ, b[n:])
		if size < 0 {
			return protowire.ParseError(size)
		}
		field := b[:n+size]
		b = b[n+size:]
		if typ == protowire.BytesType && (num == htmlField || num == propsField) {
			v, _ := protowire.ConsumeBytes(field[n:])
			if len(v) == 0 {
				v = nil
			}
			if num == htmlField {
				html = v[:len(v):len(v)]
			} else {
				props = v[:len(v):len(v)]
			}
			continue
		}
		rest = append(rest, field...)
	}
	if err := proto.Unmarshal(rest, m); err != nil {
		return err
	}
	m.Html, m.PropsJson = html, props
	return nil
}
