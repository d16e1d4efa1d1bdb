package server

import "time"

// Timeouts are a page's three deadlines, each counted from the request's arrival: the
// public package's ssr.Timeouts, converted (their fields are the same, which the compiler
// holds).
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

// CachePolicy is a page's cache policy (RFC 5861 windows); a zero TTL: not cached. The
// public package's ssr.CachePolicy, converted (their fields are the same, which the
// compiler holds).
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
	// Timeouts are the page's deadlines, already resolved against the site's (the public
	// package resolves and validates them once, in Page); zero: the site's.
	Timeouts Timeouts
	// Variants name the request parts the page depends on: "header:Name", "cookie:name".
	Variants []string
	Cache    CachePolicy
	// Stream renders with React's renderToPipeableStream (stream.go).
	Stream bool
}
