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
	"fmt"
	"html/template"
	"net/http"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// IslandRenderer renders the islands of a page in one call; *renderclient.Client is the real
// one. A Renderer without it leaves every island to the browser.
type IslandRenderer interface {
	RenderIslands(ctx context.Context, req *ssrv1.RenderIslandsRequest) (*ssrv1.RenderIslandsResponse, error)
}

// IslandPolicy is how an island's HTML is kept: per island, its props and the code that
// rendered it. A zero TTL renders it for every page that shows it. The public package's
// ssr.IslandOptions, converted (their fields are the same, which the compiler holds).
type IslandPolicy struct {
	TTL  time.Duration
	Tags []string
}

// maxIslands bounds the islands of one page, as the renderer does.
const maxIslands = 256

// Island declares an island the templates use, with how its HTML is kept; its name is
// checked against the renderer's bundle (Check). An island used without being declared is
// rendered uncached.
func (s *Site) Island(name string, policy IslandPolicy) {
	s.mu.Lock()
	s.islands[name] = policy
	s.mu.Unlock()
	s.d.names.use(islandPage(name), "an island")
}

// islandPage is an island's name where pages are named: metrics, the renderer's bundle check.
func islandPage(name string) string { return "island:" + name }

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
	doc = s.appendIslands(doc, page, marked, htmls, nonce, counts.clientBuild, assetsAt)

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
	if outer, ok := r.Context().Value(answeredKey{}).(*unanswered); ok {
		outer.islandsRendered = true
	}
	writeCompressed(w, r, cmp.Or(status, http.StatusOK), doc)
	return nil
}

// appendIslands appends page to doc with each island it marks in place (htmls[i]; nil: left
// to the browser, its root empty and its props in place), and the assets of client build
// clientBuild (empty: the current one), with nonce, at page[linkAt], at or before the first
// island; linkAt < 0: not linked here.
func (s *Site) appendIslands(doc, page []byte, marked []markedIsland, htmls [][]byte, nonce, clientBuild string, linkAt int) []byte {
	at := 0
	for i, m := range marked {
		if 0 <= linkAt && at <= linkAt && linkAt <= m.start {
			doc = append(doc, page[at:linkAt]...)
			doc = s.d.shell.AppendAssets(doc, nonce, clientBuild)
			at = linkAt
		}
		doc = append(doc, page[at:m.start]...)
		doc = document.AppendIsland(doc, m.name, htmls[i], m.props)
		at = m.end
	}
	return append(doc, page[at:]...)
}
