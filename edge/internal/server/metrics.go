package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/conns"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	"google.golang.org/grpc/status"
)

// Metrics are the edge's Prometheus metrics, registered on a registry the caller owns.
type Metrics struct {
	reg                prometheus.Registerer
	requests           *prometheus.CounterVec
	requestDuration    *prometheus.HistogramVec
	renderDuration     *prometheus.HistogramVec
	rendersInFlight    prometheus.Gauge
	cacheRequests      *prometheus.CounterVec
	collapsed          *prometheus.CounterVec
	refreshes          *prometheus.CounterVec
	privateRenders     *prometheus.CounterVec
	sharedCalls        *prometheus.HistogramVec
	evictions          prometheus.Counter
	dialFailures       prometheus.Counter
	streamPartial      *prometheus.CounterVec
	streamUnflushed    *prometheus.CounterVec
	clientBuildUnknown prometheus.Counter
	deferred           *prometheus.CounterVec
	islands            *prometheus.CounterVec
	connectionsClosed  *prometheus.CounterVec
}

// NewMetrics registers the edge's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_requests_total",
			Help: "HTTP requests by route pattern, status code and outcome (ssr, asset, a fallback reason, or client-closed).",
		}, []string{"route", "code", "outcome"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "edge_request_duration_seconds",
			Help:    "HTTP requests, from the handler's start to the response's last byte handed to the connection, by route and outcome (as edge_requests_total): what users wait for, cache hits and fallbacks included.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .035, .05, .075, .1, .15, .25, .5, 1, 2, 5},
		}, []string{"route", "outcome"}),
		renderDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "edge_render_duration_seconds",
			Help:    "Render calls to the renderer, from the edge's side, by route and gRPC result; late renders included.",
			Buckets: []float64{.002, .005, .01, .02, .035, .05, .075, .1, .15, .25, .5, 1, 2, 5},
		}, []string{"route", "result"}),
		rendersInFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edge_renders_in_flight",
			Help: "Render calls waiting for the renderer, a Go template's islands calls included, and those past their render timeout.",
		}),
		cacheRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_cache_requests_total",
			Help: "Page requests by route and what the cache had: hit, stale (served while refreshing), stale-if-error, miss, pass (hit-for-miss), bypass.",
		}, []string{"route", "result"}),
		collapsed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_cache_collapsed_total",
			Help: "Requests that waited for a render another request had started (coalesced misses).",
		}, []string{"route"}),
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_cache_background_refreshes_total",
			Help: "Background renders started to refresh a stale entry (stale-while-revalidate).",
		}, []string{"route"}),
		sharedCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "edge_shared_cache_seconds",
			Help:    "Calls to the shared cache's store (edge.shared_cache_address) by operation (get, set, lock, purge, put-asset, get-asset) and result (hit, miss, ok, held, error, unavailable: the circuit is open, invalid: a value that fails its checks or its authentication, served as a miss).",
			Buckets: []float64{.0002, .0005, .001, .002, .005, .01, .025, .05, .1},
		}, []string{"op", "result"}),
		privateRenders: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_cache_private_rerenders_total",
			Help: "Requests that waited on a coalesced render whose response was private (Set-Cookie, private, no-store) and so rendered again for themselves.",
		}, []string{"route"}),
		evictions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "edge_cache_evictions_total",
			Help: "Entries evicted to stay within cache_max_mb (newcomers the cache's admission turned away included: a key asked for less often than the entry it would displace), or dropped past every staleness window.",
		}),
		dialFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "edge_renderer_dial_failures_total",
			Help: "Failed connection attempts to the renderer's unix socket (nobody listening, or a listener of another user, refused); about one a second while it is down, traffic or not. The log has a line only when they start and when they stop.",
		}),
		streamPartial: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_stream_partial_total",
			Help: "Streamed responses closed before their render completed, its pending Suspense boundaries left to the browser, by route and why: timeout (the route's stream_timeout) or error (the render failed after its shell).",
		}, []string{"route", "reason"}),
		clientBuildUnknown: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "edge_client_build_unknown_total",
			Help: clientBuildUnknownHelp,
		}),
		streamUnflushed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_stream_unflushed_total",
			Help: "Streamed responses whose first flush did not reach the connection, so that the client gets the page only at its end, by route and why: not-supported (no writer on the way can flush) or swallowed (a writer between the page and Wrap's took the flush and did not pass it on: a router's or middleware's that flushes only an http.Flusher).",
		}, []string{"route", "reason"}),
		deferred: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_deferred_total",
			Help: "Deferred values a Go loader's functions computed, by route and outcome: ok, error (the function failed or panicked), late (not done within the render's hard timeout, less a margin for the render to end) or cancelled (the render completed without reading the value; after a failed render the functions run on, for the fallback document).",
		}, []string{"route", "outcome"}),
		islands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_islands_total",
			Help: "Islands of the shop's own HTML pages (behind Wrap), by island and outcome: hit (its HTML from the cache), rendered, coalesced (rendered by the call of another page that missed it at the same moment), or why it was left to the browser (the X-SSR-Fallback words: render-error, timeout, renderer-unavailable, overloaded, quarantined...).",
		}, []string{"island", "outcome"}),
	}
	m.connectionsClosed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "edge_connections_closed_total",
		Help: "Public connections refused or closed for another's sake (ListenAndServe): per-client (a newcomer past its address's share), stalled (a connection whose client stopped reading, for a newcomer at the cap), idle (a keep-alive connection between requests, for a newcomer at the cap).",
	}, []string{"reason"})
	for _, reason := range []string{conns.ReasonPerClient, conns.ReasonStalled, conns.ReasonIdle} {
		m.connectionsClosed.WithLabelValues(reason)
	}
	for _, reason := range []string{encoderRefusedPerClient, encoderRefusedBusy} {
		encodersRefused.WithLabelValues(reason)
	}
	reg.MustRegister(m.connectionsClosed, encodersRefused, encodersReclaimed, m.islands, m.deferred, m.streamPartial, m.streamUnflushed, m.clientBuildUnknown, m.requests, m.requestDuration, m.renderDuration, m.rendersInFlight, m.cacheRequests, m.collapsed, m.refreshes, m.privateRenders, m.sharedCalls, m.evictions, m.dialFailures)
	return m
}

// island counts one island of a page by outcome.
func (m *Metrics) island(name, outcome string) { m.islands.WithLabelValues(name, outcome).Inc() }

// watch exports the cache's size.
func (m *Metrics) watch(c *htmlcache.Cache) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edge_cache_entries", Help: "Entries in the HTML cache."},
			func() float64 { n, _ := c.Stats(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edge_cache_bytes", Help: "Bytes used by the HTML cache, every encoding counted."},
			func() float64 { _, b := c.Stats(); return float64(b) }),
	)
}

// RendererDialFailed counts one failed connection attempt to the renderer: it is
// renderclient.Options.OnDialFailure.
func (m *Metrics) RendererDialFailed() { m.dialFailures.Inc() }

// ConnectionClosed counts a public connection refused or closed for another's sake, by its
// reason (conns.Reason*).
func (m *Metrics) ConnectionClosed(reason string) { m.connectionsClosed.WithLabelValues(reason).Inc() }

func (m *Metrics) cacheResult(route, result string) {
	m.cacheRequests.WithLabelValues(route, result).Inc()
}

// observeRender records one render call; err is nil on success.
func (m *Metrics) observeRender(route string, began time.Time, err error) {
	result := "OK"
	if err != nil {
		result = status.Code(err).String()
	}
	m.renderDuration.WithLabelValues(route, result).Observe(time.Since(began).Seconds())
}

const clientBuildUnknownHelp = "Rendered pages and islands whose server bundle was built with a client build assets_dir does not hold (no manifest named it since the edge started, or its files are gone): each links the current client build instead, which may not hydrate it. The log names the build once."
