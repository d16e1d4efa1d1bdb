package server

// Islands: a page the Go server writes itself (its own html/template) with React components
// where its template says, {{ island "Cart" .Cart }}. Executing the template leaves a marker
// per island; Template then renders every island the cache lacks in one RenderIslands call,
// writes each one's HTML (or nothing, for the browser to render) in its root with its props
// after it, and links the client build, whose entry brings each island to life on its own.

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"regexp"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// IslandRenderer renders the islands of a page in one call; *renderclient.Client is the real
// one. A Renderer without it leaves every island to the browser.
type IslandRenderer interface {
	RenderIslands(ctx context.Context, req *ssrv1.RenderIslandsRequest) (*ssrv1.RenderIslandsResponse, error)
}

// IslandPolicy is how an island's HTML is kept: per island, its props and the code that
// rendered it. A zero TTL renders it for every page that shows it.
type IslandPolicy struct {
	TTL  time.Duration
	Tags []string
}

// maxIslands bounds the islands of one page, as the renderer does.
const maxIslands = 256

// islandMark starts the comment the template function leaves where an island goes. Its
// random part is this process's: no text a template writes can be taken for one (and
// html/template escapes a page's text anyway).
var islandMark = []byte("<!--ssr-island:" + rand.Text() + ":")

var islandName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// IsIslandName reports whether name may name an island: 1 to 128 letters, digits, '_' and '-'.
func IsIslandName(name string) bool { return islandName.MatchString(name) }

// IslandMarker is the template function `island`: {{ island "Cart" .Cart }} marks where
// the island Cart goes, with its props (marshalled to JSON, which must be an object; a
// json.RawMessage passes as it is; nil is {}). Site.Template renders it there. Use it
// where the template writes element content: elsewhere html/template escapes the marker.
func IslandMarker(name string, props any) (template.HTML, error) {
	if !IsIslandName(name) {
		return "", fmt.Errorf("island %q: a name is 1 to 128 letters, digits, '_' and '-'", name)
	}
	var b []byte
	switch v := props.(type) {
	case nil:
		b = []byte("{}")
	case json.RawMessage:
		if !json.Valid(v) {
			return "", fmt.Errorf("island %q: its props are not JSON", name)
		}
		b = bytes.TrimLeft(v, " \t\r\n")
	default:
		var err error
		if b, err = json.Marshal(props); err != nil {
			return "", fmt.Errorf("island %q: its props: %w", name, err)
		}
	}
	if b[0] != '{' {
		return "", fmt.Errorf("island %q: its props must be a JSON object", name)
	}
	// Escaped, the JSON holds no '>': the comment ends where the marker does.
	var m bytes.Buffer
	m.Write(islandMark)
	m.WriteString(name)
	m.WriteByte(':')
	json.HTMLEscape(&m, b)
	m.WriteString("-->")
	return template.HTML(m.String()), nil
}

// markedIsland is one marker in an executed template: at page[start:end].
type markedIsland struct {
	start, end int
	name       string
	props      []byte
}

// findIslands returns the markers in page, in order.
func findIslands(page []byte) []markedIsland {
	var found []markedIsland
	for at := 0; ; {
		i := bytes.Index(page[at:], islandMark)
		if i < 0 {
			return found
		}
		start := at + i
		rest := page[start+len(islandMark):]
		colon := bytes.IndexByte(rest, ':')
		end := bytes.Index(rest, []byte("-->"))
		if colon < 0 || end < colon {
			return found // cut off: not a marker IslandMarker wrote
		}
		found = append(found, markedIsland{
			start: start, end: start + len(islandMark) + end + len("-->"),
			name: string(rest[:colon]), props: rest[colon+1 : end],
		})
		at = found[len(found)-1].end
	}
}

// Island declares an island the templates use, with how its HTML is kept; its name is
// checked against the renderer's bundle (Check). An island used without being declared is
// rendered uncached.
func (s *Site) Island(name string, policy IslandPolicy) {
	s.mu.Lock()
	s.islands[name] = policy
	s.mu.Unlock()
	s.d.names.use(islandPage(name), "an island", false)
}

// islandPage is an island's name where pages are named: metrics, the renderer's bundle check.
func islandPage(name string) string { return "island:" + name }

// islandsPage names a call's islands in its span: the one island's page, or "islands".
func islandsPage(islands []*ssrv1.Island) string {
	if len(islands) == 1 {
		return islandPage(islands[0].GetName())
	}
	return "islands"
}

func (s *Site) islandPolicy(name string) (IslandPolicy, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.islands[name]
	return p, ok
}

// Template executes t with data and answers r with the result, status (zero: 200) and the
// headers already set on w: every island it marks rendered in one renderer call (those
// the cache holds, in none), and the client build linked before </head>. An island that
// failed, was late, or met a renderer that is down is left to the browser, its props in
// place; the page itself is always served. An error from t is returned with nothing
// written.
func (s *Site) Template(w http.ResponseWriter, r *http.Request, status int, t *template.Template, data any) error {
	if status != 0 && (status < 200 || status > 599) {
		return fmt.Errorf("status %d: a page's is 200 to 599", status)
	}
	arrived := time.Now()
	bp := buffers.Get().(*[]byte)
	out := bytes.NewBuffer((*bp)[:0])
	defer func() { putBuffer(bp, out.Bytes()) }()
	if err := t.Execute(out, data); err != nil {
		return err
	}
	page := out.Bytes()
	marked := findIslands(page)
	if len(marked) > maxIslands {
		return fmt.Errorf("the page marks %d islands, more than %d", len(marked), maxIslands)
	}
	htmls, counts := s.renderIslands(r, marked)

	dp := buffers.Get().(*[]byte)
	doc := (*dp)[:0]
	defer func() { putBuffer(dp, doc) }()
	assetsAt := len(page)
	if len(marked) > 0 {
		assetsAt = marked[0].start
		if i := bytes.Index(page[:assetsAt], []byte("</head>")); i >= 0 {
			assetsAt = i
		}
	}
	nonce := ""
	if s.o.Nonce != nil {
		nonce = s.o.Nonce(r)
	}
	doc = s.appendIslands(doc, page, marked, htmls, nonce, assetsAt)

	h := w.Header()
	if len(marked) > 0 {
		h.Add("Server-Timing", fmt.Sprintf(`islands;dur=%.2f;desc="%d rendered, %d cached, %d left to the browser"`,
			float64(time.Since(arrived))/1e6, counts.rendered, counts.cached, counts.browser))
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "text/html; charset=utf-8")
	}
	// The body's coding depends on the request's Accept-Encoding: a shared cache must know.
	h.Add("Vary", "Accept-Encoding")
	writeCompressed(w, r, cmp.Or(status, http.StatusOK), doc)
	return nil
}

// appendIslands appends page to doc with each island it marks in place (htmls[i]; nil: left
// to the browser, its root empty and its props in place), and the client build's assets,
// with nonce, at page[linkAt], at or before the first island; linkAt < 0: not linked here.
func (s *Site) appendIslands(doc, page []byte, marked []markedIsland, htmls [][]byte, nonce string, linkAt int) []byte {
	at := 0
	for i, m := range marked {
		if 0 <= linkAt && at <= linkAt && linkAt <= m.start {
			doc = append(doc, page[at:linkAt]...)
			doc = s.d.shell.AppendAssets(doc, nonce)
			at = linkAt
		}
		doc = append(doc, page[at:m.start]...)
		doc = document.AppendIsland(doc, m.name, htmls[i], m.props)
		at = m.end
	}
	return append(doc, page[at:]...)
}

// islandCounts say where a page's islands came from.
type islandCounts struct{ rendered, cached, browser int }

// renderIslands returns each marked island's HTML, nil for those left to the browser: from
// the cache, else from one renderer call within the render timeout.
func (s *Site) renderIslands(r *http.Request, marked []markedIsland) ([][]byte, islandCounts) {
	htmls := make([][]byte, len(marked))
	var counts islandCounts
	var missed []int
	keys := make([]string, len(marked))
	policies := make([]IslandPolicy, len(marked))
	gen, build := s.d.cache.Generation(), s.d.shell.BuildID()
	for i, m := range marked {
		policy, declared := s.islandPolicy(m.name)
		if !declared {
			s.d.names.use(islandPage(m.name), "a template", false)
		}
		policies[i] = policy
		if policy.TTL > 0 {
			keys[i] = islandKey(build, m.name, m.props)
			if e, state := s.d.cache.Get(keys[i]); state == htmlcache.Fresh && s.d.build.matches(e) {
				htmls[i] = e.Bodies[""]
				counts.cached++
				s.d.metrics.island(m.name, "hit")
				continue
			}
		}
		missed = append(missed, i)
	}
	if len(missed) == 0 {
		return htmls, counts
	}
	fail := func(i int, reason string) {
		counts.browser++
		s.d.metrics.island(marked[i].name, reason)
	}
	ir, ok := s.d.renderer.(IslandRenderer)
	sl := &slot{slots: s.d.slots}
	if !ok || !sl.take() {
		for _, i := range missed {
			fail(i, ReasonOverloaded)
		}
		return htmls, counts
	}
	defer sl.release()
	req := &ssrv1.RenderIslandsRequest{Url: r.URL.RequestURI(), Islands: make([]*ssrv1.Island, len(missed))}
	for j, i := range missed {
		req.Islands[j] = &ssrv1.Island{Name: marked[i].name, PropsJson: marked[i].props}
	}
	// As a page's render call: the request's id and trace context to the renderer, a span,
	// the in-flight gauge.
	ctx, cancel := context.WithTimeout(flightContext(r.Context()), s.o.Timeouts.Render)
	defer cancel()
	s.d.metrics.rendersInFlight.Inc()
	ctx, span := s.d.callSpan(ctx, islandsSpan, islandsPage(req.Islands))
	resp, err := ir.RenderIslands(s.d.outgoing(ctx), req)
	s.d.metrics.rendersInFlight.Dec()
	endRender(span, err)
	if err == nil && len(resp.GetIslands()) != len(missed) {
		err = fmt.Errorf("renderer: %d islands answered for %d asked", len(resp.GetIslands()), len(missed))
	}
	if err != nil {
		reason := reasonFor(err)
		if reason == ReasonDeadline { // the call's deadline is the render timeout
			reason = ReasonTimeout
		}
		s.d.log.Warn("islands left to the browser", "url", req.Url, "islands", len(missed), "reason", reason, "err", err)
		for _, i := range missed {
			fail(i, reason)
		}
		return htmls, counts
	}
	for j, res := range resp.GetIslands() {
		i := missed[j]
		rendered := res.GetRendered()
		if rendered == nil {
			e := res.GetError()
			reason := islandReason(e.GetCode())
			s.d.log.Warn("island left to the browser", "url", req.Url, "island", marked[i].name, "reason", reason,
				"code", e.GetCode().String(), "err", e.GetMessage())
			fail(i, reason)
			continue
		}
		s.d.build.rendered(rendered.GetBundleId())
		htmls[i] = rendered.GetHtml()
		counts.rendered++
		s.d.metrics.island(marked[i].name, "rendered")
		if keys[i] != "" && s.d.cache.Fits(len(htmls[i])) {
			e := &htmlcache.Entry{
				Key: keys[i], Path: islandPage(marked[i].name), Tags: policies[i].Tags, Status: http.StatusOK,
				Stored: s.d.cache.Now(), TTL: policies[i].TTL, Bodies: map[string][]byte{"": htmls[i]},
			}
			s.d.build.stamp(e, rendered.GetBundleId())
			s.d.cache.Set(e, gen)
		}
	}
	return htmls, counts
}

// islandKey is the cache key of an island's HTML: the client build (as pages'), its name
// and a hash of its props.
func islandKey(build, name string, props []byte) string {
	sum := sha256.Sum256(props)
	return "island\x00" + build + "\x00" + name + "\x00" + hex.EncodeToString(sum[:])
}

// islandReason names an island's own failure with the words a page's fallback uses.
func islandReason(code ssrv1.RenderErr) string {
	switch code {
	case ssrv1.RenderErr_RENDER_ERR_DEADLINE:
		return ReasonTimeout
	case ssrv1.RenderErr_RENDER_ERR_QUEUE_FULL, ssrv1.RenderErr_RENDER_ERR_WOULD_MISS_DEADLINE:
		return ReasonOverloaded
	case ssrv1.RenderErr_RENDER_ERR_DRAINING, ssrv1.RenderErr_RENDER_ERR_CANCELLED:
		return ReasonUnavailable
	case ssrv1.RenderErr_RENDER_ERR_QUARANTINED:
		return ReasonQuarantined
	case ssrv1.RenderErr_RENDER_ERR_PAGE_TOO_LARGE:
		return ReasonTooLarge
	case ssrv1.RenderErr_RENDER_ERR_WORKER_LOST:
		return ReasonWorkerLost
	case ssrv1.RenderErr_RENDER_ERR_PAGE_NOT_FOUND:
		return ReasonUnknownPage
	case ssrv1.RenderErr_RENDER_ERR_INVALID_PROPS:
		return ReasonBadRequest
	default:
		return ReasonRenderError
	}
}
