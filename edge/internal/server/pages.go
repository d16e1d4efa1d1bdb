// Package server is the edge's HTTP side: routes to pages, renders them through the
// renderer with a soft deadline, falls back to the client-side-render shell, serves assets.
package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/renderclient"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/ssr/v1"
)

// Renderer renders one page; *renderclient.Client is the real one.
type Renderer interface {
	Render(ctx context.Context, req *ssrv1.RenderRequest) (*ssrv1.RenderResponse, error)
}

// page serves one route.
type page struct {
	route      string // the ServeMux pattern, for metrics
	name       string
	params     []string // wildcard names in the route pattern
	variants   []string
	soft, hard time.Duration
	// unmatched marks the catch-all: every unmatched path shares one render request and
	// answers 404, whatever the page says.
	unmatched bool

	renderer Renderer
	shell    *document.Shell
	metrics  *Metrics
	log      *slog.Logger
}

var wildcard = regexp.MustCompile(`\{([^}.$]+)(?:\.\.\.)?\}`)

func newPage(r config.Route, e config.Edge, deps deps) *page {
	soft, hard := r.EffectiveTimeouts(e)
	p := &page{
		route: r.Pattern, name: r.Page, variants: r.Variants, soft: soft, hard: hard,
		renderer: deps.renderer, shell: deps.shell, metrics: deps.metrics, log: deps.log,
	}
	for _, m := range wildcard.FindAllStringSubmatch(r.Pattern, -1) {
		p.params = append(p.params, m[1])
	}
	return p
}

type rendered struct {
	resp *ssrv1.RenderResponse
	err  error
}

func (p *page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := p.request(r)
	// The render runs on its own context: it is bounded by the hard deadline, not by this
	// request, so a render that outlives the soft deadline can still complete (and, with the
	// cache, serve the next request).
	done := make(chan rendered, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), p.hard)
		defer cancel()
		p.metrics.rendersInFlight.Inc()
		defer p.metrics.rendersInFlight.Dec()
		began := time.Now()
		resp, err := p.renderer.Render(ctx, req)
		p.metrics.observeRender(p.route, began, err)
		done <- rendered{resp, err}
	}()

	soft := time.NewTimer(p.soft)
	defer soft.Stop()
	select {
	case res := <-done:
		if res.err != nil {
			p.fallback(w, r, req, renderclient.Reason(res.err), res.err)
			return
		}
		p.write(w, r, req, res.resp)
	case <-soft.C:
		p.fallback(w, r, req, renderclient.ReasonTimeout, nil)
	case <-r.Context().Done():
	}
}

func (p *page) request(r *http.Request) *ssrv1.RenderRequest {
	req := &ssrv1.RenderRequest{Page: p.name}
	if p.unmatched {
		return req
	}
	req.Url = r.URL.RequestURI()
	if len(p.params) > 0 {
		req.Params = make(map[string]string, len(p.params))
		for _, name := range p.params {
			req.Params[name] = r.PathValue(name)
		}
	}
	if len(p.variants) > 0 {
		req.Variants = make(map[string]string, len(p.variants))
		for _, v := range p.variants {
			kind, name, _ := strings.Cut(v, ":")
			if kind == "header" {
				req.Variants[v] = r.Header.Get(name)
			} else if c, err := r.Cookie(name); err == nil {
				req.Variants[v] = c.Value
			}
		}
	}
	return req
}

// blockedHeaders are headers the edge owns; a page cannot set them.
var blockedHeaders = map[string]bool{
	"Content-Length": true, "Content-Type": true, "Content-Encoding": true, "Transfer-Encoding": true,
	"Connection": true, "Keep-Alive": true, "Upgrade": true, "Trailer": true, "Te": true,
	"Proxy-Connection": true, "X-Ssr-Fallback": true, "X-Request-Id": true, "Server-Timing": true,
}

func (p *page) write(w http.ResponseWriter, r *http.Request, req *ssrv1.RenderRequest, resp *ssrv1.RenderResponse) {
	status := int(resp.GetStatus())
	if status == 0 {
		status = http.StatusOK
	}
	if status < 200 || status > 599 {
		p.fallback(w, r, req, renderclient.ReasonInvalidReply, fmt.Errorf("page %q answered status %d", req.Page, status))
		return
	}
	if p.unmatched && status == http.StatusOK {
		status = http.StatusNotFound
	}
	h := w.Header()
	for _, kv := range resp.GetHeaders() {
		if name := http.CanonicalHeaderKey(kv.GetName()); !blockedHeaders[name] {
			h.Add(name, kv.GetValue())
		}
	}
	if t := resp.GetTiming(); t != nil {
		h.Set("Server-Timing", fmt.Sprintf("queue;dur=%.1f, load;dur=%.1f, render;dur=%.1f",
			float64(t.GetQueueUs())/1e3, float64(t.GetLoadUs())/1e3, float64(t.GetRenderUs())/1e3))
	}
	if status >= 300 && status < 400 {
		w.WriteHeader(status)
		return
	}
	name := resp.GetPage()
	if name == "" {
		name = req.Page
	}
	props := resp.GetPropsJson()
	if props == nil {
		props = []byte("{}")
	}
	p.respond(w, status, document.Page{
		Name: name, URL: req.Url, Params: req.Params,
		Head: resp.GetHead(), HTML: resp.GetHtml(), PropsJSON: props,
	})
}

// fallback answers with the client-side-render shell: the browser renders the page itself.
func (p *page) fallback(w http.ResponseWriter, r *http.Request, req *ssrv1.RenderRequest, reason string, err error) {
	attrs := []any{"reason", reason, "page", req.Page, "url", req.Url, "request_id", RequestID(r.Context())}
	if err != nil {
		attrs = append(attrs, "err", err.Error())
	}
	p.log.Warn("serving client-side-render fallback", attrs...)
	status := http.StatusOK
	if p.unmatched {
		status = http.StatusNotFound
	}
	h := w.Header()
	h.Set("X-SSR-Fallback", reason)
	h.Set("Cache-Control", "no-store")
	p.respond(w, status, document.Page{Name: req.Page, URL: req.Url, Params: req.Params})
}

var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 256<<10); return &b }}

func (p *page) respond(w http.ResponseWriter, status int, doc document.Page) {
	bp := buffers.Get().(*[]byte)
	body := p.shell.Append((*bp)[:0], doc)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
	*bp = body[:0]
	buffers.Put(bp)
}
