package renderclient

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// inFrames marshals m and splits it into 16 KiB buffers, as grpc-go hands a received message
// to the codec.
func inFrames(t testing.TB, m proto.Message) mem.BufferSlice {
	msg, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var s mem.BufferSlice
	for len(msg) > 0 {
		n := min(len(msg), 16<<10)
		s = append(s, mem.SliceBuffer(msg[:n]))
		msg = msg[n:]
	}
	return s
}

func page(htmlBytes int) *ssrv1.RenderResponse {
	return &ssrv1.RenderResponse{
		Status:    200,
		Head:      "<title>Shop</title>",
		Html:      []byte(strings.Repeat("<div class=\"card\">product</div>", htmlBytes/32)),
		PropsJson: []byte(strings.Repeat(`{"name":"Lamp <b>","price":1999},`, 38<<10/33)),
	}
}

func TestCodec(t *testing.T) {
	c := newCodec(1 << 20)
	if c.Name() != grpcproto.Name {
		t.Errorf("name %q, want %q", c.Name(), grpcproto.Name)
	}
	// Larger first, so the smaller ones reuse its buffer; the last is beyond the top tier.
	for _, size := range []int{600 << 10, 141 << 10, 20 << 10, 100, 3 << 20} {
		want := page(size)
		var got ssrv1.RenderResponse
		if err := c.Unmarshal(inFrames(t, want), &got); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(&got, want) {
			t.Fatalf("html %d bytes: got %d html bytes, %d props bytes, want %d, %d",
				size, len(got.Html), len(got.PropsJson), len(want.Html), len(want.PropsJson))
		}
	}
	// Larger first again: a freed buffer comes back uncleared, and a smaller request must
	// not carry its bytes.
	for _, propsBytes := range []int{200 << 10, 38 << 10, 5 << 10, 100, 3 << 20} {
		req := request(propsBytes)
		data, err := c.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := proto.Marshal(req); !bytes.Equal(data.Materialize(), want) {
			t.Errorf("props %d bytes: Marshal differs from proto.Marshal", propsBytes)
		}
		data.Free() // as grpc-go does once the request is written
	}
	if _, err := c.Marshal("not a message"); err == nil {
		t.Error("Marshal of a string: no error")
	}
	if err := c.Unmarshal(inFrames(t, page(100)), "not a message"); err == nil {
		t.Error("Unmarshal into a string: no error")
	}
}

// request is a render request with a Go loader's props of about propsBytes.
func request(propsBytes int) *ssrv1.RenderRequest {
	return &ssrv1.RenderRequest{
		Page: "home", Url: "/?page=2", Params: map[string]string{"id": "7"},
		PropsJson: []byte(strings.Repeat(`{"name":"Lamp <b>","price":1999},`, max(1, propsBytes/33))),
	}
}

// BenchmarkMarshal encodes a request with the shop listing's 38 KB of props, and frees it as
// grpc-go does once it is written.
func BenchmarkMarshal(b *testing.B) {
	req := request(38 << 10)
	for _, c := range []struct {
		name  string
		codec encoding.CodecV2
	}{
		{"grpc-go", encoding.GetCodecV2(grpcproto.Name)},
		{"renderclient", newCodec(16 << 20)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				data, err := c.codec.Marshal(req)
				if err != nil {
					b.Fatal(err)
				}
				data.Free()
			}
		})
	}
}

// BenchmarkUnmarshal unmarshals a 180 KB page that arrived in 16 KiB frames.
func BenchmarkUnmarshal(b *testing.B) {
	data := inFrames(b, page(141<<10))
	for _, c := range []struct {
		name  string
		codec encoding.CodecV2
	}{
		{"grpc-go", encoding.GetCodecV2(grpcproto.Name)},
		{"renderclient", newCodec(16 << 20)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(data.Len()))
			b.ReportAllocs()
			for b.Loop() {
				var resp ssrv1.RenderResponse
				if err := c.codec.Unmarshal(data, &resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
