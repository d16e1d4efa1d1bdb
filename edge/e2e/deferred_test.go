package e2e

// Deferred values end to end: a Go server on the public package (ssr), its loader's deferred
// functions, the real renderer over a unix socket, the fixture's `deferred` page (one Suspense
// boundary per value, each behind an error boundary of its own). The functions wait on
// channels the tests close: "the shell, then the value" is an order of events, not a race
// with a clock.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/logtest"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

// deferredSite is a Go server whose page /deferred/{n} renders the fixture's `deferred` page
// with the values load gives it.
type deferredSite struct {
	url  string
	logs *logtest.Buffer
}

func startDeferredSite(t testing.TB, o ssr.Options, page ssr.PageOptions) *deferredSite {
	t.Helper()
	dir := t.TempDir()
	socket := filepath.Join(dir, "r.sock")
	harness.StartRenderer(t, socket, "SSR_RENDERER_BUNDLE="+fixtureBundle())
	logs := &logtest.Buffer{}
	o.RendererAddress, o.AssetsDir, o.Logger = "unix://"+socket, assetsDir(), slog.New(slog.NewJSONHandler(logs, nil))
	srv, err := ssr.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	mux := http.NewServeMux()
	page.Route = "GET /deferred/{n}"
	mux.Handle(page.Route, srv.Page("deferred", page))
	ts := httptest.NewServer(srv.Wrap(mux))
	t.Cleanup(ts.Close)
	if err := srv.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &deferredSite{url: ts.URL, logs: logs}
}

// deferredTimeouts are far beyond a loaded runner's: these tests are about order.
var deferredTimeouts = ssr.Options{Timeouts: ssr.Timeouts{Render: 10 * time.Second, Stream: 20 * time.Second, Hard: 30 * time.Second}}

// gated is a Deferred that returns value once gate is closed, counting its calls.
func gated(gate <-chan struct{}, calls *atomic.Int32, value any) ssr.Deferred {
	return func(ctx context.Context) (any, error) {
		calls.Add(1)
		select {
		case <-gate:
			return value, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func TestDeferredValueStreamsIntoTheRunningPage(t *testing.T) {
	gate := make(chan struct{})
	var calls atomic.Int32
	site := startDeferredSite(t, deferredTimeouts, ssr.PageOptions{Stream: true, Load: func(*http.Request) (ssr.Result, error) {
		return ssr.Result{Deferred: map[string]ssr.Deferred{
			"fast": func(context.Context) (any, error) { return "fast value", nil },
			"slow": gated(gate, &calls, map[string]int{"answer": 42}),
		}}, nil
	}})
	page := open(t, site.url+"/deferred/1", nil)
	if resp := page.resp; resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Cache-Status"), "detail=streamed") {
		t.Fatalf("got %d, Cache-Status %q: want a streamed page", resp.StatusCode, resp.Header.Get("Cache-Status"))
	}
	page.until(t, `data-testid="pending-slow"`)
	shell := page.got.String()
	if strings.Contains(shell, "42") || strings.Contains(shell, "data-ssr-deferred") {
		t.Fatalf("the slow value arrived before its function returned:\n%.3000s", shell)
	}
	close(gate)
	doc := page.rest(t)
	for _, want := range []string{
		`data-testid="value-fast"`,
		// React's JSON.stringify, HTML-escaped by React.
		`{&quot;answer&quot;:42}`,
		`</div>` + "\n" + `<script type="application/json" data-ssr-deferred="fast">{"value":"fast value"}</script>` + "\n" +
			`<script type="application/json" data-ssr-deferred="slow">{"value":{"answer":42}}</script>` + "\n" + `<script id="__SSR_DATA__"`,
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("the document lacks %s:\n%.4000s", want, doc)
		}
	}
	if at := strings.Index(doc, `value-slow`); at < len(shell) {
		t.Errorf("the slow value's boundary is in the shell (at %d of %d bytes)", at, len(shell))
	}
	if calls.Load() != 1 {
		t.Errorf("the slow function was called %d times, want 1", calls.Load())
	}
}

func TestFailingDeferredValueFailsItsBoundaryAlone(t *testing.T) {
	site := startDeferredSite(t, deferredTimeouts, ssr.PageOptions{Stream: true, Load: func(r *http.Request) (ssr.Result, error) {
		return ssr.Result{Deferred: map[string]ssr.Deferred{
			"ok":     func(context.Context) (any, error) { return "fine", nil },
			"broken": func(context.Context) (any, error) { return nil, errors.New("reviews db: password=hunter2 refused") },
			"panics": func(context.Context) (any, error) { panic("a bug in the shop") },
		}}, nil
	}})
	got := harness.Get(t, site.url+"/deferred/1")
	resp, doc := got.Response, got.Text
	if resp.StatusCode != 200 || !strings.HasSuffix(doc, "</html>\n") || resp.Trailer.Get("X-SSR-Fallback") != "" {
		t.Fatalf("got %d, fallback %q: want the whole page, its failing boundaries left to the browser:\n%.3000s",
			resp.StatusCode, resp.Trailer.Get("X-SSR-Fallback"), doc)
	}
	for _, want := range []string{
		`data-testid="value-ok"`,
		`data-testid="pending-broken"`, `data-testid="pending-panics"`,
		`<script type="application/json" data-ssr-deferred="broken">{"error":"deferred value \"broken\" failed"}</script>`,
		`<script type="application/json" data-ssr-deferred="panics">{"error":"deferred value \"panics\" failed"}</script>`,
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("the document lacks %s:\n%.4000s", want, doc)
		}
	}
	if strings.Contains(doc, "hunter2") || strings.Contains(doc, "a bug in the shop") {
		t.Error("the browser got a deferred function's error: only the edge's log may hold it")
	}
	logs := site.logs.String()
	for _, want := range []string{"hunter2", "a bug in the shop"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks the cause %q:\n%s", want, logs)
		}
	}
}

// TestLateDeferredValue: a function that does not heed its context. The live response closes
// at the stream deadline with the value marked missing; the render goes on and ends before
// the hard timeout, the value settled as late, and the complete document is stored.
func TestLateDeferredValue(t *testing.T) {
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	// The deadlines are the behaviour here: the stream's 1 s, the hard 3 s less the 100 ms margin.
	o := ssr.Options{Timeouts: ssr.Timeouts{Render: time.Second, Stream: time.Second, Hard: 3 * time.Second}}
	site := startDeferredSite(t, o, ssr.PageOptions{Stream: true, Cache: ssr.CachePolicy{TTL: time.Hour, Query: []string{}}, Load: func(r *http.Request) (ssr.Result, error) {
		return ssr.Result{Deferred: map[string]ssr.Deferred{
			"stuck": func(context.Context) (any, error) { <-never; return nil, nil },
		}}, nil
	}})
	live := harness.Get(t, site.url+"/deferred/1")
	if want := `{"error":"deferred value \"stuck\" was not ready when the page was sent"}`; !strings.Contains(live.Text, want) ||
		live.Trailer.Get("X-SSR-Fallback") != "partial" {
		t.Fatalf("trailer X-SSR-Fallback %q: want the response closed at the stream deadline with %s:\n%.3000s",
			live.Trailer.Get("X-SSR-Fallback"), want, live.Text)
	}
	var stored harness.Response
	poll.Until(t, "the complete document stored", func() bool {
		stored = harness.Get(t, site.url+"/deferred/1")
		return strings.Contains(stored.Header.Get("Cache-Status"), "hit")
	})
	if want := `{"error":"deferred value \"stuck\" was not ready in time"}`; !strings.Contains(stored.Text, want) || strings.Contains(stored.Text, `c.data="$!"`) {
		t.Errorf("want the stored document complete, with %s:\n%.3000s", want, stored.Text)
	}
	if !strings.Contains(site.logs.String(), "deferred value late") {
		t.Errorf("the log does not say the value was late:\n%s", site.logs.String())
	}
}

func TestDeferredValuesOfAPageThatDoesNotStream(t *testing.T) {
	site := startDeferredSite(t, deferredTimeouts, ssr.PageOptions{Load: func(r *http.Request) (ssr.Result, error) {
		return ssr.Result{Deferred: map[string]ssr.Deferred{
			"a": func(context.Context) (any, error) { return []int{1, 2}, nil },
			"b": func(context.Context) (any, error) { return nil, errors.New("down") },
		}}, nil
	}})
	got := harness.Get(t, site.url+"/deferred/1")
	resp, doc := got.Response, got.Text
	if strings.Contains(resp.Header.Get("Cache-Status"), "streamed") || resp.ContentLength <= 0 {
		t.Errorf("Cache-Status %q, Content-Length %d: want the page whole", resp.Header.Get("Cache-Status"), resp.ContentLength)
	}
	for _, want := range []string{`<p data-testid="value-a">[1,2]</p>`, `data-testid="pending-b"`, `data-ssr-deferred="a">{"value":[1,2]}`} {
		if !strings.Contains(doc, want) {
			t.Errorf("the document lacks %s:\n%.4000s", want, doc)
		}
	}
}

// TestDeferredHerdCallsEachFunctionOnce: 200 concurrent misses of one cached page share one
// render, and so one call of each deferred function; every one of them gets the shell while
// the slow value is held back, then the value; a later hit calls none.
func TestDeferredHerdCallsEachFunctionOnce(t *testing.T) {
	const herd = 200
	gate := make(chan struct{})
	var fast, slow atomic.Int32
	site := startDeferredSite(t, deferredTimeouts, ssr.PageOptions{
		Stream: true, Cache: ssr.CachePolicy{TTL: time.Hour, Query: []string{}},
		Load: func(r *http.Request) (ssr.Result, error) {
			return ssr.Result{Deferred: map[string]ssr.Deferred{
				"fast": func(context.Context) (any, error) { fast.Add(1); return 1, nil },
				"slow": gated(gate, &slow, 2),
			}}, nil
		},
	})
	var shells, done sync.WaitGroup
	errs := make(chan error, herd)
	for i := range herd {
		shells.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			shellDone := sync.OnceFunc(shells.Done)
			defer shellDone()
			resp, err := streamClient.Get(site.url + "/deferred/1")
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			page := &reading{resp: resp, body: resp.Body}
			if err := page.wait(`pending-slow`); err != nil {
				errs <- fmt.Errorf("request %d: %w", i, err)
				return
			}
			shellDone()
			if _, err := io.Copy(&page.got, resp.Body); err != nil || !strings.Contains(page.got.String(), `data-ssr-deferred="slow">{"value":2}`) {
				errs <- fmt.Errorf("request %d: %v, the document lacks the slow value:\n%.2000s", i, err, page.got.String())
			}
		}()
	}
	shells.Wait()
	close(gate)
	done.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// The flight stores the page just after its last byte went out: a request in between
	// still joins it (collapsed), which calls nothing either.
	poll.Until(t, "a hit on the page the herd's render stored", func() bool {
		return strings.Contains(harness.Get(t, site.url+"/deferred/1").Header.Get("Cache-Status"), "hit")
	})
	if fast.Load() != 1 || slow.Load() != 1 {
		t.Errorf("calls: fast %d, slow %d; want one each for %d requests and a hit", fast.Load(), slow.Load(), herd)
	}
}

// BenchmarkDeferredResponse measures what deferred values cost a streamed page's response:
// time to first byte and to the last, uncached, with no deferred values and with two whose
// functions take 100 ms and 400 ms. The first byte should not wait for either, and the end
// for the slower only (they run at once). Every case sends one request each half second: an
// idle renderer answers slower than a busy one, so the cases compare at the same pace.
//
//	cd edge && go test ./e2e -run '^$' -bench DeferredResponse -benchtime 20x
func BenchmarkDeferredResponse(b *testing.B) {
	sleep := func(d time.Duration) ssr.Deferred {
		return func(ctx context.Context) (any, error) {
			select {
			case <-time.After(d):
				return d.String(), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	cases := []struct {
		name     string
		deferred map[string]ssr.Deferred
	}{
		{"none", nil},
		{"100ms-and-400ms", map[string]ssr.Deferred{"fast": sleep(100 * time.Millisecond), "slow": sleep(400 * time.Millisecond)}},
	}
	site := startDeferredSite(b, deferredTimeouts, ssr.PageOptions{Stream: true, Load: func(r *http.Request) (ssr.Result, error) {
		return ssr.Result{Deferred: cases[slices.IndexFunc(cases, func(c struct {
			name     string
			deferred map[string]ssr.Deferred
		}) bool {
			return c.name == r.URL.Query().Get("case")
		})].deferred}, nil
	}, Cache: ssr.CachePolicy{Query: []string{"case"}}})
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var first, last []float64
			for b.Loop() {
				began := time.Now()
				resp, err := streamClient.Get(site.url + "/deferred/1?case=" + c.name)
				if err != nil {
					b.Fatal(err)
				}
				one := make([]byte, 1)
				if _, err := io.ReadFull(resp.Body, one); err != nil {
					b.Fatal(err)
				}
				first = append(first, float64(time.Since(began).Microseconds())/1e3)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				last = append(last, float64(time.Since(began).Microseconds())/1e3)
				time.Sleep(time.Until(began.Add(500 * time.Millisecond)))
			}
			b.ReportMetric(median(first), "ttfb-ms")
			b.ReportMetric(median(last), "complete-ms")
		})
	}
}

func median(xs []float64) float64 {
	slices.Sort(xs)
	if len(xs) == 0 {
		return 0
	}
	return xs[len(xs)/2]
}
