package server

import (
	"compress/gzip"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
	"google.golang.org/grpc/codes"

	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// decode undoes a Content-Encoding the edge sends.
func decode(t *testing.T, coding, body string) string {
	t.Helper()
	var r io.Reader
	var err error
	switch coding {
	case "":
		return body
	case "gzip":
		r, err = gzip.NewReader(strings.NewReader(body))
	case "br":
		r = brotli.NewReader(strings.NewReader(body))
	case "zstd":
		var d *zstd.Decoder
		d, err = zstd.NewReader(strings.NewReader(body))
		r = d
	default:
		t.Fatalf("unknown coding %q", coding)
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decoding %s: %v", coding, err)
	}
	return string(b)
}

// TestEveryResponseHonoursAcceptEncoding: whichever path answers (a render, a bypass, a
// hit-for-miss, the client-side-render shell, a stored copy), a client that asks gets the
// document compressed in a coding it accepts, and one that does not gets identity.
func TestEveryResponseHonoursAcceptEncoding(t *testing.T) {
	page := renders("<main>" + strings.Repeat("product card ", 400) + "</main>")
	noStore := func(ctx context.Context, req *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
		resp, err := page(ctx, req)
		resp.Cache = &ssrv1.CacheHint{NoStore: true}
		return resp, err
	}
	paths := []struct {
		name   string
		cached bool
		render func(context.Context, *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error)
		header map[string]string
		// stored copies come in the codings stored: no zstd
		stored bool
	}{
		{name: "rendered, uncached route", render: page},
		{name: "bypass", cached: true, render: page, header: map[string]string{"Authorization": "Bearer x"}},
		{name: "hit-for-miss", cached: true, render: noStore},
		{name: "client-side-render shell", render: failWith(codes.Internal, "RENDER_ERR_PAGE_THREW", "boom")},
		{name: "stored copy", cached: true, render: page, stored: true},
	}
	for _, path := range paths {
		for _, tc := range []struct{ accept, want, wantStored string }{
			{"", "", ""},
			{"gzip", "gzip", "gzip"},
			{"gzip, deflate, br, zstd", "zstd", "br"},
			{"br;q=1, gzip;q=0.8", "br", "br"},
			{"zstd;q=0, gzip", "gzip", "gzip"},
			{"identity", "", ""},
		} {
			t.Run(path.name+"/"+tc.accept, func(t *testing.T) {
				s := start(t, func(e *testSite) {
					if path.cached {
						cached(e)
					}
				})
				s.renderer.render = path.render
				_, identity := getWith(t, s.url+"/", path.header) // also stores, or leaves the marker
				header := map[string]string{"Accept-Encoding": tc.accept}
				for k, v := range path.header {
					header[k] = v
				}
				resp, body := getWith(t, s.url+"/", header)
				want := tc.want
				if len(identity) < minCompressBytes { // the shell without props: not worth it
					want = ""
				}
				if path.stored {
					want = tc.wantStored
					if !strings.HasPrefix(resp.Header.Get("Cache-Status"), "sidecar-ssr; hit") {
						t.Fatalf("want a stored copy, got Cache-Status %q", resp.Header.Get("Cache-Status"))
					}
				}
				if got := resp.Header.Get("Content-Encoding"); got != want {
					t.Fatalf("Accept-Encoding %q: got Content-Encoding %q, want %q", tc.accept, got, want)
				}
				if decoded := decode(t, want, body); decoded != identity {
					t.Errorf("the %s body decodes to %d bytes, not the %d-byte document", want, len(decoded), len(identity))
				}
				if !strings.Contains(strings.Join(resp.Header.Values("Vary"), ", "), "Accept-Encoding") {
					t.Errorf("no Vary: Accept-Encoding")
				}
				if want != "" && len(body) >= len(identity) {
					t.Errorf("%s: %d bytes for a %d-byte document", want, len(body), len(identity))
				}
			})
		}
	}
}
