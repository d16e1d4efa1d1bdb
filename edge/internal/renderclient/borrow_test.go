package renderclient

import (
	"bytes"
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/renderclient/rendertest"
)

// pageRenderer answers each Render with a page of 180 KB filled with the first byte of the
// request's URL, and the same props.
type pageRenderer struct {
	ssrv1.UnimplementedRenderServiceServer
}

func (pageRenderer) Render(_ context.Context, req *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
	return &ssrv1.RenderResponse{
		Status: 200, Head: "<title>" + req.Url + "</title>", Page: req.Page,
		Html: bytes.Repeat([]byte(req.Url[:1]), 180<<10), PropsJson: []byte(`"` + req.Url + `"`),
	}, nil
}

func startPageRenderer(t *testing.T) *Client {
	t.Helper()
	return serve(t, rendertest.Server{RenderServiceServer: pageRenderer{}})
}

// TestBorrowedPagesStayTheirs: a borrowed page is never overwritten by the pages received
// after it while it is held, however many; once released, its buffer goes to the next one.
func TestBorrowedPagesStayTheirs(t *testing.T) {
	c := startPageRenderer(t)
	ctx := context.Background()
	type held struct {
		url     string
		resp    *ssrv1.RenderResponse
		release func()
	}
	intact := func(h held) {
		t.Helper()
		want, _ := pageRenderer{}.Render(ctx, &ssrv1.RenderRequest{Url: h.url})
		if !bytes.Equal(h.resp.Html, want.Html) || string(h.resp.PropsJson) != string(want.PropsJson) || h.resp.Head != want.Head {
			t.Fatalf("%s: its page changed while it was held (html starts %q)", h.url, h.resp.Html[:8])
		}
	}
	var all []held
	for _, url := range []string{"/a", "/b", "/c", "/d", "/e", "/f"} {
		resp, release, err := c.RenderBorrowed(ctx, &ssrv1.RenderRequest{Page: "home", Url: url})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, held{url, resp, release})
		for _, h := range all {
			intact(h)
		}
		if len(all) > 2 { // let the oldest go: its buffer may be the next page's
			all[0].release()
			all = all[1:]
		}
	}
	for _, h := range all {
		intact(h)
		h.release()
	}
	// An append to a borrowed page copies: it cannot write into the buffer past the page.
	resp, release, err := c.RenderBorrowed(ctx, &ssrv1.RenderRequest{Page: "home", Url: "/g"})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if cap(resp.Html) != len(resp.Html) || cap(resp.PropsJson) != len(resp.PropsJson) {
		t.Errorf("borrowed slices have room past their end: html %d/%d, props %d/%d",
			len(resp.Html), cap(resp.Html), len(resp.PropsJson), cap(resp.PropsJson))
	}
}

// FuzzDecodeBorrowing: whatever the bytes, decodeBorrowing agrees with proto.Unmarshal, on the
// message and on whether they are one.
func FuzzDecodeBorrowing(f *testing.F) {
	for _, m := range []*ssrv1.RenderResponse{
		page(2 << 10),
		{Status: 404, Headers: []*ssrv1.Header{{Name: "Set-Cookie", Value: "a=b"}}, Cache: &ssrv1.CacheHint{Tags: []string{"t"}}},
		{Html: []byte("<p>"), Timing: &ssrv1.Timing{RenderUs: 7}, BundleId: "b1"},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(append(b, b...)) // every field twice: the last wins
		f.Add(b[:len(b)/2])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want, got ssrv1.RenderResponse
		wantErr := proto.Unmarshal(b, &want)
		gotErr := decodeBorrowing(bytes.Clone(b), &got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("proto.Unmarshal: %v; decodeBorrowing: %v", wantErr, gotErr)
		}
		if wantErr == nil && !proto.Equal(&want, &got) {
			t.Fatalf("decoded differently:\nproto.Unmarshal %v\ndecodeBorrowing %v", &want, &got)
		}
	})
}
