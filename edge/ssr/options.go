package ssr

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// Options configure a Server. Zero values mean the defaults given.
type Options struct {
	// RendererAddress is the renderer's gRPC address. If empty,
	// "unix:///tmp/sidecar-ssr/renderer.sock".
	RendererAddress string
	// AssetsDir is the client build: manifest.json and assets/. If empty, "app/dist/client".
	AssetsDir string
	// Timeouts are the deadlines of every page whose PageOptions.Timeouts do not set them.
	Timeouts Timeouts
	// MaxPageBytes bounds a rendered page: a larger one falls back. If zero, 16 MiB.
	MaxPageBytes int
	// RenderSlots caps the renders that take CPU at once, each holding a slot: a page's
	// Loader, then its render call (up to the shell, for a page that streams). A render that only waits for
	// data holds none: a streamed page past its shell, a page waiting for its Deferred
	// values (a page's own load() in the renderer holds one while it waits: the edge cannot
	// tell that wait from rendering). Past it a request gets its fallback at once, before
	// its Loader runs. If zero, 64.
	RenderSlots int
	// Nonce returns the Content-Security-Policy nonce of the response to r (typically set
	// by the shop's CSP middleware in r's context): every script element the document
	// carries gets it, a stored page included (its copy is made without one, and each
	// response gets its own). If nil, scripts carry no nonce.
	Nonce func(r *http.Request) string
	// EarlyHints sends a 103 Early Hints response with the client build's scripts and styles
	// (Link: rel=modulepreload, rel=preload) before a request waits for its render, so the
	// browser fetches them meanwhile. Off by default here: httptest.ResponseRecorder, and
	// middleware that records the first status it sees, take the 103 for the final status.
	// The edge binary turns it on (its early_hints key).
	EarlyHints bool
	// CompressHTML compresses the HTML the shop's own handlers write behind Wrap (Gin's
	// c.HTML, a template executed into the writer) as the package's pages are compressed:
	// zstd, br or gzip as the request accepts, Vary: Accept-Encoding. A response that sets
	// Content-Encoding itself, a HEAD request, a status without a body, and responses that
	// are not HTML are left as they are. Off by default: it is the shop's response.
	CompressHTML bool
	// CacheMaxBytes bounds the HTML cache by the memory its documents hold; a document above
	// a 16th of it (every encoding counted) is not stored. If zero, 256 MiB.
	CacheMaxBytes int
	// SharedCacheAddress turns on the cache's second level, shared by every replica of the
	// server: a Redis or Valkey at redis://host:port/db, rediss://…, or unix:///path. A page
	// one replica rendered is then a hit on the others, a cold page is rendered once across
	// them, and purges reach them all. Each call to it waits 25ms at most; past that the
	// server goes on without it. If empty, each replica has only its own cache.
	SharedCacheAddress string
	// SharedCacheKey, if not empty, authenticates every value in that store (HMAC-SHA256): a
	// value something else wrote there is a miss. At least 32 bytes, the same on every
	// replica.
	SharedCacheKey []byte
	// AdminToken admits "Authorization: Bearer <AdminToken>" to the Admin handler's
	// /debug/pprof/ and POST /cache/purge. If empty, they are closed to every caller.
	AdminToken string
	// TracerProvider receives a span per page request (a child of the caller's when its W3C
	// traceparent says so), its cache lookup, a wait on another request's render, the
	// Loader, and the render call, whose trace the renderer continues (with its own
	// renderer.otlp_endpoint). If nil, no spans, at no cost.
	TracerProvider trace.TracerProvider
	// Registerer receives the edge_* metrics. If nil, they are kept in a private registry,
	// with the Go runtime's and the process's collectors. The Admin handler serves them at
	// /metrics when it can gather them: the private registry, or a Registerer that is also a
	// prometheus.Gatherer (a *prometheus.Registry); with any other, /metrics answers 404 and
	// the shop serves its registry itself. Register one Server per Registerer.
	Registerer prometheus.Registerer
	// Logger receives fallbacks, refused sockets and options, and bugs. If nil,
	// slog.Default().
	Logger *slog.Logger
}

// Timeouts are a page's deadlines, each counted from the request's arrival. In
// Options, zero values mean the defaults given; in PageOptions, the Server's.
type Timeouts struct {
	// Render is how long a request waits for its page (the Loader and the render): past it,
	// it gets the stale copy or the client-side-render document. If zero, 150ms.
	Render time.Duration
	// Hard bounds the Loader and the render, which go on after Render to fill the cache: it
	// is the render call's deadline, past which the renderer aborts that render. If zero, 2s.
	Hard time.Duration
	// Stream bounds how long a streaming page (PageOptions.Stream) may keep Suspense
	// boundaries pending before the browser is left to render them; the render goes on to
	// Hard and fills the cache. It lies between Render and Hard. If zero, 1s; for a page
	// whose own Render or Hard moves that range, the nearest end of it.
	Stream time.Duration
}

// over is t with each zero deadline taken from site's. A Stream deadline the page does not
// set is site's brought within the page's Render and Hard (a page that waits 2 s for its
// shell streams from 2 s, not from a site-wide 1 s).
func (t Timeouts) over(site Timeouts) Timeouts {
	if t.Render == 0 {
		t.Render = site.Render
	}
	if t.Hard == 0 {
		t.Hard = site.Hard
	}
	if t.Stream == 0 {
		t.Stream = min(max(site.Stream, t.Render), t.Hard)
	}
	return t
}

// The defaults of zero Options, in one place: the docs above say them, and a test holds
// the two equal.
const (
	defaultRendererAddress = "unix:///tmp/sidecar-ssr/renderer.sock"
	defaultAssetsDir       = "app/dist/client"
	defaultMaxPageBytes    = 16 << 20
	defaultRenderSlots     = 64
	defaultCacheMaxBytes   = 256 << 20
)

var defaultTimeouts = Timeouts{Render: 150 * time.Millisecond, Hard: 2 * time.Second, Stream: time.Second}

// What the Server decides alone, for every shop: no option sets these.
const (
	// notFoundTTL is the freshness of the one stored not-found page.
	notFoundTTL = 10 * time.Second
	// passTTL is how long requests render side by side after a render that may not be
	// stored (hit-for-miss), instead of queueing behind one another's.
	passTTL = 10 * time.Second
	// ttlJitter shortens each stored TTL by up to this fraction, at random, so that entries
	// stored together do not expire together.
	ttlJitter = 0.1
	// sharedTimeout bounds each call to the shared cache's store: a store slower than a
	// render is no cache.
	sharedTimeout = 25 * time.Millisecond
	// entryShare: a document above Options.CacheMaxBytes / entryShare is not stored, so
	// that one page cannot evict a cache's worth of others.
	entryShare = 16
)

// withDefaults is o with each zero field that has a default set to it.
func (o Options) withDefaults() Options {
	orDefault(&o.RendererAddress, defaultRendererAddress)
	orDefault(&o.AssetsDir, defaultAssetsDir)
	orDefault(&o.Timeouts.Render, defaultTimeouts.Render)
	orDefault(&o.Timeouts.Hard, defaultTimeouts.Hard)
	orDefault(&o.Timeouts.Stream, defaultTimeouts.Stream)
	orDefault(&o.MaxPageBytes, defaultMaxPageBytes)
	orDefault(&o.RenderSlots, defaultRenderSlots)
	orDefault(&o.CacheMaxBytes, defaultCacheMaxBytes)
	return o
}

func orDefault[T comparable](field *T, value T) {
	var zero T
	if *field == zero {
		*field = value
	}
}
