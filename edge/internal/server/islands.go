package server

// Islands: a page the Go server writes itself (its own html/template) with React components
// where its template says, {{ island "Cart" .Cart }}. Executing the template leaves a marker
// per island; behind Wrap, the island writer (islandwriter.go) then renders every island the
// cache lacks in one RenderIslands call, writes each one's HTML (or nothing, for the browser
// to render) in its root with its props after it, and links the client build, whose entry
// brings each island to life on its own.

import (
	"context"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/document"
	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// IslandRenderer renders the islands of a page in one call; *renderclient.Client is the real
// one. A Renderer without it leaves every island to the browser.
type IslandRenderer interface {
	RenderIslands(ctx context.Context, req *ssrv1.RenderIslandsRequest) (*ssrv1.RenderIslandsResponse, error)
}

// Island declares an island the templates use, and how long its HTML is kept (per island,
// props and the code that rendered it; zero: rendered for every page that shows it); its
// name is checked against the renderer's bundle (Check). An island used without being
// declared is rendered uncached.
func (s *Site) Island(name string, ttl time.Duration) {
	s.mu.Lock()
	s.islands[name] = ttl
	s.mu.Unlock()
	s.d.names.use(islandPage(name), "an island")
}

// islandPage is an island's name where pages are named: metrics, the renderer's bundle check.
func islandPage(name string) string { return "island:" + name }

// islandTTL is how long island name's HTML is kept, and whether it was declared.
func (s *Site) islandTTL(name string) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ttl, ok := s.islands[name]
	return ttl, ok
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
