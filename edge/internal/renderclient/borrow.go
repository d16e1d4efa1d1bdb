package renderclient

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// A response arrives as one buffer per HTTP/2 frame, joined here into one pooled buffer.
// A borrowed page's HTML and props point into it: proto.Unmarshal copies every bytes field
// into an allocation of its own, ~180 KB a page, 90 % of the bytes the edge allocated under
// load, and what set the pace of its garbage collections (bench/README.md, "Edge CPU
// profile"). The caller gives the buffer back once nothing reads the page. Built with the
// race detector, a released buffer is overwritten first, so that a read after its release
// shows as a corrupted page.

// inbound is one ChannelResponse as the channel's reader receives it: its own fields read,
// its part still encoded, in buf.
type inbound struct {
	id         uint64
	field      protowire.Number // the part's: responseRendered...
	part       []byte
	piece      []byte
	lastPiece  bool
	rendererUs uint64
	buf        *[]byte // the pooled buffer part and piece point into
	err        error   // the response could not be received whole (too large)
}

// ChannelResponse's field numbers, from the generated code.
var (
	responseID         = responseField("id")
	responseRendered   = responseField("rendered")
	responseStreamed   = responseField("streamed")
	responseIslands    = responseField("islands")
	responseError      = responseField("error")
	responsePiece      = responseField("piece")
	responseLastPiece  = responseField("last_piece")
	responseRendererUs = responseField("renderer_us")
	streamTrailer      = (*ssrv1.RenderStreamResponse)(nil).ProtoReflect().Descriptor().Fields().ByName("trailer").Number()
	htmlField          = fieldNumber("html")
	propsField         = fieldNumber("props_json")
)

func responseField(name string) protowire.Number {
	return (*ssrv1.ChannelResponse)(nil).ProtoReflect().Descriptor().Fields().ByName(protoreflect.Name(name)).Number()
}

func fieldNumber(name string) protowire.Number {
	return (*ssrv1.RenderResponse)(nil).ProtoReflect().Descriptor().Fields().ByName(protoreflect.Name(name)).Number()
}

// unmarshalInbound joins data into a pooled buffer and reads in's fields from it.
func (c codec) unmarshalInbound(data mem.BufferSlice, in *inbound) error {
	buf := c.joins.get(data.Len())
	data.CopyTo(*buf)
	if err := in.parse(*buf); err != nil {
		c.joins.put(buf)
		return err
	}
	in.buf = buf
	return nil
}

// parse reads a ChannelResponse's own fields; its part stays a slice of b. As in
// proto.Unmarshal, the last occurrence of a field wins.
func (in *inbound) parse(b []byte) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case typ == protowire.VarintType && (num == responseID || num == responseRendererUs || num == responseLastPiece):
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			b = b[m:]
			switch num {
			case responseID:
				in.id = v
			case responseRendererUs:
				in.rendererUs = v
			default:
				in.lastPiece = v != 0
			}
		case typ == protowire.BytesType && isPart(num):
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			b = b[m:]
			in.field, in.part, in.piece = num, v[:len(v):len(v)], nil
			if num == responsePiece {
				in.field, in.part, in.piece = 0, nil, v
			}
		default:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			b = b[m:]
		}
	}
	return nil
}

func isPart(num protowire.Number) bool {
	switch num {
	case responseRendered, responseStreamed, responseIslands, responseError, responsePiece:
		return true
	}
	return false
}

// ends says whether the response is its render's last.
func (in *inbound) ends() bool {
	if in.err != nil || in.field != responseStreamed {
		return true
	}
	num, _, n := protowire.ConsumeTag(in.part)
	return n > 0 && num == streamTrailer
}

// release gives the buffer back; a no-op if there is none.
func (in *inbound) release(joins *joinBuffers) {
	if in.buf == nil {
		return
	}
	if poisonReleased {
		for i := range *in.buf {
			(*in.buf)[i] = 0xdd
		}
	}
	joins.put(in.buf)
	in.buf = nil
}

// failure is the render's error when the response is one (ChannelError, or a response that
// could not be received), else nil.
func (in *inbound) failure() *Error {
	if in.err != nil {
		return &Error{Status: status.Convert(in.err)}
	}
	if in.field != responseError {
		return nil
	}
	var e ssrv1.ChannelError
	if err := proto.Unmarshal(in.part, &e); err != nil {
		return &Error{Status: status.New(codes.Internal, "renderer sent a malformed error: "+err.Error())}
	}
	code := ""
	if e.Code != ssrv1.RenderErr_RENDER_ERR_UNSPECIFIED {
		code = e.Code.String()
	}
	return &Error{Status: status.New(codes.Code(e.Status), e.Message), RendererCode: code}
}

// decode unmarshals the part into m, which must be the part's type.
func (in *inbound) decode(want protowire.Number, m proto.Message) error {
	if in.field != want {
		return status.Errorf(codes.Internal, "renderer answered with field %d of ChannelResponse, not %d", in.field, want)
	}
	return proto.Unmarshal(in.part, m)
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
