package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	ssrv1 "github.com/sidecar-ssr/sidecar-ssr/edge/internal/proto/ssr/v1"
)

// Loader computes a page's props in Go (the shop's database, services). It runs only when a
// render is needed, inside the coalescing: a cache hit never calls it. The request it gets
// holds only what the cache key holds (see loaderRequest).
type Loader func(*http.Request) (*Result, error)

// Result is what a Loader decided for one render: the public package's Result, its props
// marshalled.
type Result struct {
	// Props is the page's props as a JSON object, which the Loader checked (the public
	// package's does): a scan here would cost every render.
	Props []byte
	// Status, if not zero, replaces the page's status.
	Status int
	// Header is added to the page's headers (a Set-Cookie makes the response private).
	Header http.Header
	// Redirect answers with a redirect to this location instead of rendering.
	Redirect string
	// RedirectStatus is the redirect's status; if zero, 302.
	RedirectStatus int
	// NotFound renders the app's not-found page with status 404.
	NotFound bool
	// MaxAgeSeconds, if not zero, caps the route's TTL.
	MaxAgeSeconds uint32
	// Tags are the page's surrogate keys, for purges by tag.
	Tags []string
	// Head is trusted markup for the document's head, after the server's (Options.Head) and
	// before the page's own: kept in a fallback, where the page's head() has not run.
	Head string
	// Deferred are values computed while the page renders (deferred.go), by name; a redirect
	// or the not-found page calls none.
	Deferred map[string]DeferredFunc

	// decided is what the fields above decide, set by page.load.
	decided decision
	// deferred runs Deferred for the render, once it starts.
	deferred *deferredRun
}

// private: a decision that sets a cookie or is marked private or no-store belongs to the
// request whose loader made it, in a fallback as in a render.
func (l *Result) private() bool {
	if l.Header.Get("Set-Cookie") != "" {
		return true
	}
	for _, v := range l.Header.Values("Cache-Control") {
		v = strings.ToLower(v)
		if strings.Contains(v, "private") || strings.Contains(v, "no-store") {
			return true
		}
	}
	return false
}

// LoadError is a loader's failure: its own error, a panic, or props that cannot be sent.
// Status, if the loader chose one (500, 502, 503...), is the status to answer with; any
// other answers 503.
type LoadError struct {
	Status int
	Err    error
}

func (e *LoadError) Error() string { return "props loader: " + e.Err.Error() }
func (e *LoadError) Unwrap() error { return e.Err }

// asLoadError is err, a loader's failure, as a LoadError: as it is when it is one.
func asLoadError(err error) *LoadError {
	if le, ok := err.(*LoadError); ok {
		return le
	}
	return &LoadError{Err: err}
}

// loadStatus is the status of a response whose loader failed with err.
func loadStatus(err error) int {
	var f *LoadError
	if errors.As(err, &f) && f.Status >= 500 && f.Status <= 599 {
		return f.Status
	}
	return http.StatusServiceUnavailable
}

// load calls the loader with a request that holds only what the cache key holds, turns a
// panic into an error, and checks the props can be sent.
func (p *page) load(lr *http.Request, req *ssrv1.RenderRequest) (loaded *Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			loaded, err = nil, fmt.Errorf("panic: %v", v)
		}
	}()
	loaded, err = p.loader(lr)
	if err != nil {
		return nil, err
	}
	if loaded == nil {
		loaded = &Result{}
	}
	if loaded.decided, err = decide(loaded); err != nil {
		return nil, fmt.Errorf("page %q: the loader returned %w", req.Page, err)
	}
	if loaded.decided.redirect != "" {
		return loaded, nil
	}
	if err := checkDeferred(loaded.Deferred); err != nil {
		return nil, fmt.Errorf("page %q: the loader returned %w", req.Page, err)
	}
	if len(loaded.Props) == 0 {
		loaded.Props = []byte("{}")
	}
	if limit := p.propsLimit(); limit > 0 && int64(len(loaded.Props)) > limit {
		return nil, fmt.Errorf("page %q: props of %d bytes are over the limit of %d bytes (three quarters of the renderer's max_request_mb: the render request carries them)",
			req.Page, len(loaded.Props), limit)
	}
	return loaded, nil
}

// propsLimit is the largest props a render request may carry to the renderer, from the
// largest request it takes: the request's other fields (the URL, path values, variants,
// deferred values' names) get the last quarter. Before the renderer has answered, none is
// known (0), and a call it refuses is a failed render.
func (d *deps) propsLimit() int64 {
	b := d.bundleExports()
	if b == nil {
		return 0
	}
	return int64(b.MaxRequestBytes) - int64(b.MaxRequestBytes)/4
}

// loaderRequest is the request a loader will see, or nil for a page without one. A render may
// be coalesced for every request with its cache key and stored for later ones, so a loader must
// not read what the key leaves out: it gets the normalized URL (the query parameters the
// page keeps) and the declared header and cookie variants; its context is the render's, not
// the client's, so a client that goes away does not fail the others. A request that
// bypasses the cache renders for itself alone and gets everything, its cookies and
// Authorization included. It is made before the flight starts: r belongs to its handler.
func (p *page) loaderRequest(r *http.Request, req *ssrv1.RenderRequest) *http.Request {
	if p.loader == nil {
		return nil
	}
	lr := r.Clone(context.Background()) // keeps the path values
	if p.bypass(r) != "" {
		return lr
	}
	if u, err := url.Parse(req.Url); err == nil && !p.unmatched {
		lr.URL.RawQuery = u.RawQuery
		lr.RequestURI = req.Url
	}
	// Who sent it and to which host are not in the key: a loader that wrote them into the
	// page (a canonical URL from Host) would hand one sender's values to every visitor.
	lr.Host, lr.URL.Host, lr.URL.Scheme, lr.RemoteAddr, lr.TLS = "", "", "", "", nil
	lr.Header = http.Header{}
	var cookies []string
	for _, v := range p.keys.variants {
		kind, name, _ := strings.Cut(v, ":")
		value, ok := req.Variants[v]
		switch {
		case kind == "header" && value != "":
			// As the key holds it: the first header line, trimmed and lower-cased.
			lr.Header.Set(name, value)
		case kind == "cookie" && ok:
			cookies = append(cookies, (&http.Cookie{Name: name, Value: value}).String())
		}
	}
	if len(cookies) > 0 {
		lr.Header.Set("Cookie", strings.Join(cookies, "; "))
	}
	return lr
}

func headerList(h http.Header) []*ssrv1.Header {
	var list []*ssrv1.Header
	for name, values := range h {
		for _, v := range values {
			list = append(list, &ssrv1.Header{Name: name, Value: v})
		}
	}
	return list
}

func cacheHint(l *Result) *ssrv1.CacheHint {
	if l.MaxAgeSeconds == 0 && len(l.Tags) == 0 {
		return nil
	}
	return &ssrv1.CacheHint{MaxAgeSeconds: l.MaxAgeSeconds, Tags: l.Tags}
}

// isLoadError reports whether err is a loader's failure.
func isLoadError(err error) bool {
	var e *LoadError
	return errors.As(err, &e)
}
