package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// Where a render is held: the first request of TestRenderSlots stops at one of these until
// the test lets it go.
const (
	inLoader    = "the Go loader"
	inDeferred  = "a deferred value"
	inRender    = "the render call"
	beforeShell = "the streamed render before its shell"
	afterShell  = "the streamed render after its shell"
)

// holdingRenderer renders every page at once, except at where, for url: there it calls held
// and waits for release. It is a StreamRenderer too.
type holdingRenderer struct {
	url, where string
	held       func() // closes the test's held channel, once
	release    <-chan struct{}
}

func (h *holdingRenderer) hold(ctx context.Context, url, where string) error {
	if url != h.url || h.where != where {
		return nil
	}
	h.held()
	select {
	case <-h.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *holdingRenderer) Render(ctx context.Context, req *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error) {
	if err := h.hold(ctx, req.Url, inRender); err != nil {
		return nil, err
	}
	return &ssrv1.RenderResponse{Page: req.Page, Status: 200, Html: []byte("<p>whole</p>")}, nil
}

func (h *holdingRenderer) RenderStream(ctx context.Context, req *ssrv1.RenderStreamRequest) (RenderStream, error) {
	return &holdingStream{h: h, ctx: ctx, req: req.Render}, nil
}

// holdingStream sends the head, one chunk of body, then ends. The edge asks for the next
// message only once it has handled the last: a second Recv means the shell was handled.
type holdingStream struct {
	h    *holdingRenderer
	ctx  context.Context
	req  *ssrv1.RenderRequest
	sent int
}

func (s *holdingStream) Recv() (*ssrv1.RenderStreamResponse, error) {
	s.sent++
	switch s.sent {
	case 1:
		if err := s.h.hold(s.ctx, s.req.Url, beforeShell); err != nil {
			return nil, err
		}
		head := &ssrv1.RenderResponse{Page: s.req.Page, Status: 200}
		return &ssrv1.RenderStreamResponse{Part: &ssrv1.RenderStreamResponse_Head{Head: head}}, nil
	case 2:
		if err := s.h.hold(s.ctx, s.req.Url, afterShell); err != nil {
			return nil, err
		}
		return &ssrv1.RenderStreamResponse{Part: &ssrv1.RenderStreamResponse_Html{Html: []byte("<p>streamed</p>")}}, nil
	}
	return nil, io.EOF
}

func (*holdingStream) Send(*ssrv1.RenderStreamRequest) error { return nil }
func (*holdingStream) CloseSend() error                      { return nil }

// slotSite is a site with one render slot over r: /held (streamed or not, with a Go loader
// or not) and /other, a page that neither streams nor has a loader.
func slotSite(t *testing.T, r Renderer, stream bool, load Loader) string {
	t.Helper()
	e := defaultSite().Options
	e.AssetsDir = t.TempDir()
	if err := os.Mkdir(filepath.Join(e.AssetsDir, "assets"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.RenderSlots = 1
	// Far beyond any render here: an answer that is not "overloaded" is never "timeout".
	e.Timeouts.Render, e.Timeouts.Stream, e.Timeouts.Hard = 10*time.Second, 15*time.Second, 20*time.Second
	e.Renderer, e.Manifest = r, &document.Manifest{BuildID: "b1"}
	e.Cache = htmlcache.New(htmlcache.Options{MaxBytes: 1 << 20, MaxEntryBytes: 1 << 20})
	e.Metrics, e.Log = NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler)
	site, err := NewSite(e)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(site.Close)
	mux := http.NewServeMux()
	mux.Handle("GET /held", site.Page(Route{Pattern: "GET /held", Page: "held", Stream: stream}, PageOptions{Load: load}))
	mux.Handle("GET /other", site.Page(Route{Pattern: "GET /other", Page: "other"}, PageOptions{}))
	ts := httptest.NewServer(site.Wrap(mux))
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestRenderSlots: edge.render_slots counts what takes CPU. With one slot, a render
// held in its loader or its render call sheds a second request at once (overloaded); one
// that only waits, a streamed render past its shell or a page waiting for its deferred
// values, leaves the slot to it. Either way the first request is then server-rendered.
func TestRenderSlots(t *testing.T) {
	tests := []struct {
		where    string
		stream   bool
		loader   bool
		deferred bool
		want     string // the second request's X-SSR-Fallback; "" when server-rendered
	}{
		{inLoader, false, true, false, ReasonOverloaded},
		{inLoader, true, true, true, ReasonOverloaded},
		{inRender, false, false, false, ReasonOverloaded},
		{inRender, false, true, true, ReasonOverloaded},
		{beforeShell, true, false, false, ReasonOverloaded},
		{afterShell, true, false, false, ""},
		{afterShell, true, true, true, ""},
		{inDeferred, false, true, true, ""},
	}
	for _, tt := range tests {
		name := tt.where
		if tt.deferred {
			name += ", with deferred values"
		}
		if tt.stream {
			name += ", streamed"
		}
		t.Run(name, func(t *testing.T) {
			held, release := make(chan struct{}), make(chan struct{})
			r := &holdingRenderer{url: "/held", where: tt.where, held: sync.OnceFunc(func() { close(held) }), release: release}
			var load Loader
			if tt.loader {
				load = func(req *http.Request) (*Result, error) {
					if err := r.hold(req.Context(), req.URL.Path, inLoader); err != nil {
						return nil, err
					}
					l := &Result{Props: []byte(`{"fast":1}`)}
					if tt.deferred {
						l.Deferred = map[string]DeferredFunc{"slow": func(ctx context.Context) ([]byte, error) {
							return []byte("2"), r.hold(ctx, "/held", inDeferred)
						}}
					}
					return l, nil
				}
			}
			url := slotSite(t, r, tt.stream, load)
			first := getAsync(t, url+"/held")
			select {
			case <-held:
			case a := <-first:
				t.Fatalf("the first request answered (X-SSR-Fallback %q) without reaching %s", a.fallback(), tt.where)
			}

			resp, body := get(t, url+"/other")
			if got := resp.Header.Get("X-SSR-Fallback"); got != tt.want {
				t.Errorf("the second request, while the first is held in %s: got X-SSR-Fallback %q, want %q", tt.where, got, tt.want)
			}
			if tt.want == "" && !strings.Contains(body, "<p>whole</p>") {
				t.Errorf("the second request is not server-rendered:\n%s", body)
			}

			close(release)
			if a := <-first; a.fallback() != "" {
				t.Errorf("the first request: got X-SSR-Fallback %q, want it server-rendered", a.fallback())
			}
		})
	}
}

// TestDeferredValuesInWithNoSlotFree: a page that does not stream takes a slot again once its
// deferred values are in, without waiting for one: with none free it falls back at once
// (overloaded), with its loader's props and every value for the browser.
func TestDeferredValuesInWithNoSlotFree(t *testing.T) {
	held, release := make(chan struct{}), make(chan struct{})
	valueHeld, valueIn := make(chan struct{}), make(chan struct{})
	r := &holdingRenderer{url: "/other", where: inRender, held: sync.OnceFunc(func() { close(held) }), release: release}
	url := slotSite(t, r, false, func(*http.Request) (*Result, error) {
		return &Result{Props: []byte(`{"fast":1}`), Deferred: map[string]DeferredFunc{"slow": func(context.Context) ([]byte, error) {
			close(valueHeld)
			<-valueIn
			return []byte(`"the value"`), nil
		}}}, nil
	})
	deferred := getAsync(t, url+"/held")
	select {
	case <-valueHeld: // its loader is done and its slot given back
	case a := <-deferred:
		t.Fatalf("answered (X-SSR-Fallback %q) before its deferred value was asked for", a.fallback())
	}
	other := getAsync(t, url+"/other")
	select {
	case <-held: // the slot is /other's, its render call held
	case a := <-other:
		t.Fatalf("/other answered (X-SSR-Fallback %q) while /held waited for its value: the slot was not given back", a.fallback())
	}

	close(valueIn)
	if a := <-deferred; a.resp != nil {
		if got := a.fallback(); got != ReasonOverloaded {
			t.Errorf("got X-SSR-Fallback %q, want %q", got, ReasonOverloaded)
		}
		for _, want := range []string{`"props":{"fast":1}`, `data-ssr-deferred="slow">{"value":"the value"}`} {
			if !strings.Contains(a.body, want) {
				t.Errorf("the fallback lacks %s:\n%s", want, a.body)
			}
		}
	}
	close(release)
	if a := <-other; a.fallback() != "" {
		t.Errorf("the page holding the slot: got X-SSR-Fallback %q, want it server-rendered", a.fallback())
	}
}

// answer is a response read whole; resp is nil when the request failed (the test has
// failed then).
type answer struct {
	resp *http.Response
	body string
}

// fallback is the response's X-SSR-Fallback.
func (a answer) fallback() string {
	if a.resp == nil {
		return "(no response)"
	}
	return a.resp.Header.Get("X-SSR-Fallback")
}

// getAsync GETs url on a goroutine of its own.
func getAsync(t *testing.T, url string) <-chan answer {
	c := make(chan answer, 1)
	go func() {
		resp, err := http.Get(url)
		if err != nil {
			t.Error(err)
			c <- answer{}
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c <- answer{resp, string(body)}
	}()
	return c
}
