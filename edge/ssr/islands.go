package ssr

import (
	"html/template"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/server"
)

// IslandFuncs are the template functions of a page with islands: parse the template with
// them, template.New("order").Funcs(ssr.IslandFuncs()), and mark each island where it goes,
// in element content:
//
//	{{ island "Cart" .Cart }}
//
// names the island Cart of the app's bundle (its `islands` export) and gives it its props,
// marshalled to JSON (an object; a json.RawMessage passes as it is; nil is {}). Written in
// an HTML response through Server.Wrap, however it is written (t.Execute(w, data), Gin's
// c.HTML with engine.SetFuncMap(ssr.IslandFuncs()), Echo's c.Render), the island is
// rendered there: every island of the response in one call to the renderer, those whose
// HTML is stored in none, and the client build's scripts and styles linked before the
// first, with Options.Nonce's nonce, so that the browser hydrates each island on its own.
// An island that fails, is late (Timeouts.Render) or meets a renderer that is down is left
// to the browser: its root empty, its props in place, counted in edge_islands_total with
// the reason. The rest of the page, which is the shop's, is always served. Written any
// other way, the mark is an HTML comment holding its props.
//
// An error executing the template (a name or props the marker refuses among them) is the
// handler's to answer. To answer it with nothing of the page written, execute the template
// into a bytes.Buffer first; once it succeeds, set the status (w.WriteHeader; none is 200)
// and write the buffer to w, where Wrap renders its islands.
func IslandFuncs() template.FuncMap {
	return template.FuncMap{"island": server.IslandMarker}
}

// Island declares an island of the app's bundle that templates use (IslandFuncs), and how
// long its HTML, rendered for the same props by the same code, is reused by every page that
// shows it: zero renders it for every page (right for one that shows the visitor's own
// data). Check finds a name the bundle lacks, as it does a page's. An island used without
// being declared renders for every page. A name that is not 1 to 128 letters, digits, '_'
// and '-', or a negative ttl, is a programming error, reported as Page reports its own
// (Check, readiness, the log); the island is then not declared.
func (s *Server) Island(name string, ttl time.Duration) {
	var rs rules
	if !server.IsIslandName(name) {
		rs.broken("Island", "%q: a name is 1 to 128 letters, digits, '_' and '-'", name)
	}
	if ttl < 0 {
		rs.broken("Island", "%q: ttl must not be negative, got %s", name, ttl)
	}
	if err := rs.err(); err != nil {
		s.refuse(err)
		return
	}
	s.site.Island(name, ttl)
}

// TypedIsland declares island name as Server.Island does, with props of the Go type P:
// ssr-types (edge/cmd/ssr-types) finds each TypedIsland[P](s, name, ttl) call and writes P as
// the island's TypeScript type (IslandProps), which the app's islands are checked against,
// and as the JSON Schema the renderer checks its props against in development. A template
// should mark it with a value of P ({{ island "Cart" .Cart }} where .Cart is a P): the marker
// takes any value, and only the renderer's check in development sees another shape. P
// should be a struct (or a map with string keys): its JSON must be an object.
func TypedIsland[P any](s *Server, name string, ttl time.Duration) { s.Island(name, ttl) }
