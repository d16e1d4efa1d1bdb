package server

import "time"

// Timeouts are a page's three deadlines, each counted from the request's arrival.
type Timeouts struct {
	// Render is how long a request waits for its page (loader and render) before it gets
	// the stale copy or the client-side-render document.
	Render time.Duration
	// Hard bounds the loader and the render, which go on after Render to fill the cache:
	// the render call's gRPC deadline, past which the renderer aborts that render.
	Hard time.Duration
	// Stream is how long a streamed page may keep Suspense boundaries pending before the
	// browser is left to render them.
	Stream time.Duration
}

// Over is t with each zero deadline taken from site's. A Stream deadline the page does not
// set is site's brought within the page's Render and Hard (a page that waits 2 s for its
// shell streams from 2 s, not from a site-wide 1 s).
func (t Timeouts) Over(site Timeouts) Timeouts {
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

// CachePolicy is a page's cache policy (RFC 5861 windows). A zero TTL: not cached.
type CachePolicy struct {
	TTL, StaleWhileRevalidate, StaleIfError time.Duration
	// Query lists the query parameters the page reads; nil: every one not ignored.
	Query []string
	// PersonalizeCookies name cookies whose presence makes a request bypass the cache.
	PersonalizeCookies []string
}

// Route is one page as a router mounts it, its options valid.
type Route struct {
	// Pattern names the route in metrics and cache keys: the ServeMux pattern, or a name.
	Pattern string
	// Page is the app's page name.
	Page string
	// Timeouts override the site's (Timeouts.Over).
	Timeouts Timeouts
	// Variants name the request parts the page depends on: "header:Name", "cookie:name".
	Variants []string
	Cache    CachePolicy
	// Stream renders with React's renderToPipeableStream (stream.go).
	Stream bool
}
