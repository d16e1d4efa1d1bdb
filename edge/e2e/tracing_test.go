package e2e

import (
	"context"
	"encoding/hex"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
)

// collector is an OTLP/gRPC trace receiver: what both processes export to.
type collector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []receivedSpan
}

type receivedSpan struct {
	service string
	*tracepb.Span
}

func (c *collector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := attribute(rs.GetResource().GetAttributes(), "service.name").GetStringValue()
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans = append(c.spans, receivedSpan{service, s})
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// trace returns the spans received for traceID.
func (c *collector) trace(traceID string) []receivedSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	var spans []receivedSpan
	for _, s := range c.spans {
		if hex.EncodeToString(s.TraceId) == traceID {
			spans = append(spans, s)
		}
	}
	return spans
}

func startCollector(t *testing.T) (*collector, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, c)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return c, "http://" + ln.Addr().String()
}

// attribute is the value of attrs' key (nil when it is not set: its getters give zero values).
func attribute(attrs []*commonpb.KeyValue, key string) *commonpb.AnyValue {
	for _, kv := range attrs {
		if kv.GetKey() == key {
			return kv.GetValue()
		}
	}
	return nil
}

// TestOneTraceFromEdgeToWorker: a request whose traceparent the edge continues yields one
// trace over both processes: the edge's request, its cache lookup and render call; the
// renderer's call, its queue wait and the worker's span with the page's load and render.
// Every span has the right parent, and the request id is on both sides' spans.
func TestOneTraceFromEdgeToWorker(t *testing.T) {
	c, endpoint := startCollector(t)
	socket := t.TempDir() + "/renderer.sock"
	renderer := startRenderer(t, socket, "SSR_RENDERER_OTLP_ENDPOINT="+endpoint)
	edge := startEdge(t, socket, "SSR_EDGE_OTLP_ENDPOINT="+endpoint)

	const (
		rendered   = "4bf92f3577b34da6a3ce929d0e0e4736"
		failed     = "5bf92f3577b34da6a3ce929d0e0e4737"
		coalesced  = "6bf92f3577b34da6a3ce929d0e0e4738"
		joined     = "7bf92f3577b34da6a3ce929d0e0e4739"
		callerSpan = "00f067aa0ba902b7"
	)
	send := func(traceID, path string) *http.Response {
		req, _ := http.NewRequest("GET", edge.url+path, nil)
		req.Header.Set("traceparent", "00-"+traceID+"-"+callerSpan+"-01")
		resp, err := harness.NoRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	product := send(rendered, "/cached/products/7")
	if product.Header.Get("X-SSR-Fallback") != "" {
		t.Fatalf("/cached/products/7 fell back: %s", product.Header.Get("X-SSR-Fallback"))
	}
	requestID := product.Header.Get("X-Request-Id")
	send(failed, "/throws")
	// Two requests, from two traces, for one cold cached page: the second, sent once the
	// first one's render has reached the renderer, waits on that render.
	var wg sync.WaitGroup
	before := renderersReceived(t, renderer)
	wg.Go(func() { send(coalesced, "/cached/slow?ms=400") })
	poll.Until(t, "the first request's render at the renderer", func() bool {
		return renderersReceived(t, renderer) > before
	})
	wg.Go(func() { send(joined, "/cached/slow?ms=400") })
	wg.Wait()
	poll.Until(t, "the coalesced render stored", func() bool {
		return strings.Contains(harness.Get(t, edge.url+"/cached/slow?ms=400").Header.Get("Cache-Status"), "hit")
	})

	// Stopping flushes what both processes still buffer; the render of /cached/slow ends
	// first (the renderer drains it).
	edge.Signal(syscall.SIGTERM)
	renderer.Signal(syscall.SIGTERM)
	edge.WaitExit(15 * time.Second)
	renderer.WaitExit(15 * time.Second)

	spans := c.trace(rendered)
	byName := map[string]receivedSpan{}
	for _, s := range spans {
		byName[s.service+" "+s.Name] = s
	}
	want := []struct {
		service, name, parent string
	}{
		{"sidecar-ssr-edge", "GET /cached/products/{id}", "caller"},
		{"sidecar-ssr-edge", "cache lookup", "sidecar-ssr-edge GET /cached/products/{id}"},
		{"sidecar-ssr-edge", "ssr.v1.RenderService/Render", "sidecar-ssr-edge GET /cached/products/{id}"},
		{"sidecar-ssr-renderer", "ssr.v1.RenderService/Render", "sidecar-ssr-edge ssr.v1.RenderService/Render"},
		{"sidecar-ssr-renderer", "queue", "sidecar-ssr-renderer ssr.v1.RenderService/Render"},
		{"sidecar-ssr-renderer", "worker render", "sidecar-ssr-renderer ssr.v1.RenderService/Render"},
		{"sidecar-ssr-renderer", "load", "sidecar-ssr-renderer worker render"},
		{"sidecar-ssr-renderer", "render", "sidecar-ssr-renderer worker render"},
	}
	if len(spans) != len(want) {
		for _, s := range spans {
			t.Logf("got %s %q", s.service, s.Name)
		}
		t.Fatalf("got %d spans in the trace, want %d", len(spans), len(want))
	}
	for _, w := range want {
		s, ok := byName[w.service+" "+w.name]
		if !ok {
			t.Errorf("no span %q from %s", w.name, w.service)
			continue
		}
		parent := callerSpan
		if w.parent != "caller" {
			parent = hex.EncodeToString(byName[w.parent].SpanId)
		}
		if got := hex.EncodeToString(s.ParentSpanId); got != parent {
			t.Errorf("%s %q: parent %s, want %s (%s)", w.service, w.name, got, parent, w.parent)
		}
		if s.EndTimeUnixNano < s.StartTimeUnixNano {
			t.Errorf("%s %q ends before it starts", w.service, w.name)
		}
		t.Logf("%-22s %-28s %7.2f ms", w.service, w.name, float64(s.EndTimeUnixNano-s.StartTimeUnixNano)/1e6)
	}
	for _, name := range []string{"sidecar-ssr-edge GET /cached/products/{id}", "sidecar-ssr-renderer ssr.v1.RenderService/Render"} {
		if got := attribute(byName[name].Attributes, "ssr.request_id").GetStringValue(); got != requestID {
			t.Errorf("%s: ssr.request_id %q, want the response's X-Request-Id %q", name, got, requestID)
		}
	}
	if got := attribute(byName["sidecar-ssr-edge GET /cached/products/{id}"].Attributes, "ssr.outcome").GetStringValue(); got != "ssr" {
		t.Errorf("edge span: ssr.outcome %q", got)
	}
	worker := byName["sidecar-ssr-renderer worker render"].Attributes
	for _, key := range []string{"ssr.worker.id", "ssr.worker.heap_used_bytes"} {
		if v := attribute(worker, key).GetIntValue(); v <= 0 {
			t.Errorf("worker render: %s = %d", key, v)
		}
	}

	// A page that throws: the fallback's reason on the edge, the error code in the renderer.
	var edgeSpan, rendererSpan *tracepb.Span
	for _, s := range c.trace(failed) {
		switch {
		case s.service == "sidecar-ssr-edge" && s.Name == "GET /throws":
			edgeSpan = s.Span
		case s.service == "sidecar-ssr-renderer" && s.Name == "ssr.v1.RenderService/Render":
			rendererSpan = s.Span
		}
	}
	if edgeSpan == nil || rendererSpan == nil {
		t.Fatalf("the failed render's trace lacks a span: edge %v, renderer %v", edgeSpan != nil, rendererSpan != nil)
	}
	if got := attribute(edgeSpan.Attributes, "ssr.outcome").GetStringValue(); got != "render-error" {
		t.Errorf("edge span of /throws: ssr.outcome %q, want render-error", got)
	}
	if got := attribute(rendererSpan.Attributes, "ssr.error").GetStringValue(); got != "RENDER_ERR_PAGE_THREW" || rendererSpan.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("renderer span of /throws: ssr.error %q, status %v", got, rendererSpan.Status.GetCode())
	}

	// Two requests, one render: the render call is in the first request's trace; the
	// second's wait is a span in its own trace, linked to the first request's span.
	var leader *tracepb.Span
	calls := 0
	for _, s := range c.trace(coalesced) {
		if s.service == "sidecar-ssr-edge" && s.Name == "GET /cached/slow" {
			leader = s.Span
		}
		if s.service == "sidecar-ssr-renderer" && s.Name == "ssr.v1.RenderService/Render" {
			calls++
		}
	}
	var waits []*tracepb.Span
	for _, s := range c.trace(joined) {
		if s.service == "sidecar-ssr-edge" && s.Name == "coalesced wait" {
			waits = append(waits, s.Span)
		}
		if s.Name == "ssr.v1.RenderService/Render" {
			t.Errorf("the joining request's trace has a render call (%s)", s.service)
		}
	}
	if leader == nil || calls != 1 || len(waits) != 1 {
		t.Fatalf("coalesced: leader span found %v, %d render calls in its trace, %d waits in the joiner's; want true, 1, 1", leader != nil, calls, len(waits))
	}
	if links := waits[0].Links; len(links) != 1 || hex.EncodeToString(links[0].TraceId) != coalesced ||
		hex.EncodeToString(links[0].SpanId) != hex.EncodeToString(leader.SpanId) {
		t.Errorf("coalesced wait: links %v, want one to the first request's span %x in trace %s", links, leader.SpanId, coalesced)
	}
}
