package ssr

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/server"
)

// A Loader computes a page's props in Go. It runs only when the page must be rendered (a
// miss, a refresh, a request that bypasses the cache), once for all the requests waiting
// for that render: a cache hit never calls it.
//
// The request it gets holds only what the page's cache key holds, since the render may be
// coalesced (one render for every request waiting on its key) and stored: the path and its
// values, the query parameters the page keeps, and the declared Variants (a request that
// bypasses the cache gets everything). Its context ends at Timeouts.Hard, not when the
// client goes away, and, for a render that may be coalesced, carries none of the values the
// shop's middleware put in the request's context (a user, a session) except the trace span:
// what one visitor's middleware knows must not end up in a page stored for everyone. A request that bypasses the cache keeps them.
// An error, or a panic, answers with the stale copy if there is one, else with status 503
// (or a LoadError's) and the page's document without props, which the app's client
// renders as its errorPage with {"status": N} (X-SSR-Fallback: load-error); the error is
// logged.
type Loader func(*http.Request) (Result, error)

// LoadError is a Loader's error that chooses the response's status: 500, 502, 503 or 504
// (any other answers 503, as a plain error does).
type LoadError struct {
	Status int
	Err    error
}

func (e *LoadError) Error() string { return e.Err.Error() }

func (e *LoadError) Unwrap() error { return e.Err }

// Result is what a Loader decided for one render. Its Status, Redirect, NotFound and
// Header hold even when the render fails or is late: the client-side-render document then
// has the status (404 and the not-found page for NotFound), and a redirect needs no render.
// A Redirect wins over NotFound, NotFound over Status, as in a page's load(); a status no
// response can have is the loader's failure.
type Result struct {
	// Props are the page's props: marshalled to JSON once (it must give a JSON object), or
	// passed as they are when a json.RawMessage. The page receives them as ctx.props in its
	// load(), or as its component's props when it has none; the browser hydrates with the
	// props the page rendered with.
	Props any
	// Status, if not zero, is the response's status instead of the page's: 200 to 599; with
	// Redirect, the redirect's: 301, 302, 303, 307 or 308 (if zero, 302).
	Status int
	// Header is added to the response. A Set-Cookie, or a Cache-Control of private or
	// no-store, makes the response private: it is not stored, and it reaches only the
	// request whose loader ran.
	Header http.Header
	// Redirect, if not empty, answers with a redirect there instead of rendering, with
	// Status. 301 and 308 are cached like pages.
	Redirect string
	// NotFound renders the app's not-found page with status 404.
	NotFound bool
	// MaxAge, if not zero, shortens the page's Cache.TTL for this render.
	MaxAge time.Duration
	// Tags are surrogate keys of the stored page ("product:7"): Purge(ctx, ByTag(tag))
	// removes every page that carries one, on every replica with a shared cache.
	Tags []string
	// Head is trusted markup for this response's head (a <title>, meta tags from the
	// shop's data), after the app's documentHead() and before the page's own head(). It is
	// in the client-side-render fallback too, where head() has not run: a page whose title
	// comes from Go data gives it here, not in head(), so that the first <title> is the
	// one meant in every case. Stored with the page, as the page's own head is.
	Head template.HTML
	// Deferred are the page's slow data, by name (letters, digits, '_' and '-'): each
	// function runs on its own goroutine while the page renders, and the page's component
	// reads its value from its `deferred` prop inside a Suspense boundary. A page that
	// streams (PageOptions.Stream) sends its shell at once and each boundary once its value
	// is in; one that does not renders when all are in. See Deferred, and Defer, which
	// types a value.
	Deferred map[string]Deferred
}

// A Deferred computes one deferred value of a render, on the render's context: its
// deadline is Timeouts.Hard less a margin (a tenth, at most 100 ms) in which the page ends.
// The value is marshalled to JSON (a json.RawMessage passes as it is). An error, a panic or
// a value not ready by that deadline is logged, counted (edge_deferred_total), and reaches
// the page as a rejected promise: the boundary that reads it shows the page's error UI, the
// rest of the page is not affected. The browser gets each value with the document and
// hydrates without asking again; a cache hit calls no Deferred, and the requests coalesced
// on one render get the values of one set of calls. A redirect or NotFound calls none.
type Deferred func(ctx context.Context) (any, error)

// A RequestValue computes one of a request's own values for a partially prerendered page
// (PageOptions.PerRequest) from the request itself: its cookies, its session, what the shop's
// middleware put in its context. It runs on every request, hit or miss, on a goroutine of its
// own while the stored shell is sent; the request's context ends as a Deferred's does
// (Timeouts.Hard less a margin), or when the client goes away. The value is marshalled to
// JSON as a Deferred's; an error, a panic or a late value reaches the page as a rejected
// promise, whose boundary shows the page's error UI. It is never stored.
type RequestValue func(r *http.Request) (any, error)

// FromRequest is fn as a RequestValue. As for Defer, its value's Go type T is what ssr-types
// sees, in a map[string]RequestValue literal with constant names written in the Page call:
// T becomes the TypeScript type of the value's promise in the component's `deferred` prop.
func FromRequest[T any](fn func(r *http.Request) (T, error)) RequestValue {
	if fn == nil {
		return nil // the page's mistake, named as a nil RequestValue's is
	}
	return func(r *http.Request) (any, error) { return fn(r) }
}

// Defer is fn as a Deferred. Its value's Go type T is what ssr-types (edge/cmd/ssr-types)
// sees where a plain Deferred says only any: in a page registered with Typed, T becomes the
// TypeScript type of the value's promise in the component's `deferred` prop, so a field
// renamed in Go fails the app's typecheck where the page reads it. ssr-types sees it in a
// map[string]Deferred literal with constant names written inside the Typed call
// (docs/go.md, "Typed props"). A plain Deferred still works; its value is typed unknown.
func Defer[T any](fn func(ctx context.Context) (T, error)) Deferred {
	if fn == nil {
		return nil // the loader's mistake, named as a nil Deferred's is
	}
	return func(ctx context.Context) (any, error) { return fn(ctx) }
}

// PageOptions configure a page. The zero value renders on every request, uncached, with
// the page's own load().
type PageOptions struct {
	// Load computes the props in Go. If nil, the page's own load() does, in the renderer.
	Load Loader
	// Cache is the page's cache policy; a zero TTL means not cached.
	Cache CachePolicy
	// Variants name the request parts the page depends on besides its path and query:
	// "header:Accept-Language", "cookie:currency". They are part of the cache key, named in
	// Vary, given to the loader and sent to the page as ctx.variants.
	Variants []string
	// Timeouts override the Server's (Options.Timeouts), each one that is not zero.
	Timeouts Timeouts
	// Stream renders the page with React's renderToPipeableStream: the shell goes out as
	// soon as it is ready and each Suspense boundary as it resolves; boundaries still pending
	// Timeouts.Stream after the request arrived are left to the browser, and the render goes
	// on to fill the cache with the complete document.
	Stream bool
	// PerRequest makes the page partially prerendered (docs/go.md, "Partial prerendering"):
	// its shell is rendered once, with Load's props, and cached under Cache; each request
	// gets the stored shell at once, then, in the same response, the Suspense boundaries that
	// read one of these values, rendered for that request alone. The page reads each value
	// from its `deferred` prop, by name, inside a Suspense boundary: in the shell every one is
	// pending, so the shell holds its boundary's fallback. The page streams (see Stream); it
	// needs a Cache.TTL, and its Load returns no Deferred. A request that bypasses the cache
	// (Authorization, PersonalizeCookies) renders the page whole, its values as deferred ones.
	PerRequest map[string]RequestValue
	// Route names the page in metrics and cache keys. If empty, the page's name. Give each
	// Page handler its own (e.g. the pattern it is mounted at) when one page name is served
	// by several handlers with different options. Path values do not depend on it: they
	// come from the pattern the handler is mounted at.
	Route string
}

// CachePolicy is a page's cache policy (RFC 5861 windows).
type CachePolicy struct {
	// TTL is how long a render is fresh. Zero: the page is not cached.
	TTL time.Duration
	// StaleWhileRevalidate: past TTL, the stored copy is served at once while one
	// background render refreshes it.
	StaleWhileRevalidate time.Duration
	// StaleIfError: past TTL, the stored copy is served when a render fails or is late.
	StaleIfError time.Duration
	// Query lists the query parameters the page reads; the others are left out of the key
	// and of what the loader and the renderer see. A cached page (TTL above zero) must set
	// it, []string{} for none: Page refuses it otherwise, since every other parameter (?u=1,
	// ?u=2...) would cost a render and a stored copy of its own. Nil on an uncached page: all
	// but the tracking parameters (utm_*, fbclid, gclid, msclkid, mc_cid, mc_eid).
	Query []string
	// PersonalizeCookies name cookies whose presence makes a request personal: it bypasses
	// the cache, and its loader sees the whole request.
	PersonalizeCookies []string
}

// Page returns the handler of the app's page name. Mount it on any router; path values
// (Go 1.22 ServeMux patterns) reach the page as ctx.params. Options that are invalid
// (PageOptions.Validate: a variant that is not "header:Name" or "cookie:name", a render
// timeout above the hard one) are a programming error, reported as a page name the bundle
// lacks is: logged at ERROR, returned by Check, readiness false, and the handler answers
// every request with 500.
func (s *Server) Page(name string, o PageOptions) http.Handler {
	if err := o.Validate(s.o); err != nil {
		err = fmt.Errorf("ssr: page %q:\n%w", name, err)
		s.refuse(err)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "500 the page's options were refused at start (see the log)", http.StatusInternalServerError)
		})
	}
	// The public option types are the server's, documented for the shop: a conversion, which
	// the compiler refuses the day their fields differ, not a copy.
	r := server.Route{
		Pattern: cmp.Or(o.Route, name), Page: name, Timeouts: server.Timeouts(o.Timeouts.over(s.o.Timeouts)),
		Variants: o.Variants, Stream: o.Stream || o.PerRequest != nil, Cache: server.CachePolicy(o.Cache),
	}
	po := server.PageOptions{UsedBy: fmt.Sprintf("Page(%q)", name), PerRequest: requestJSON(o.PerRequest)}
	if o.Route != "" {
		po.UsedBy += " for route " + o.Route
	}
	if o.Load != nil {
		po.Load = func(r *http.Request) (*server.Result, error) {
			res, err := o.Load(r)
			if le, ok := errors.AsType[*LoadError](err); ok {
				return nil, &server.LoadError{Status: le.Status, Err: err}
			}
			if err != nil {
				return nil, err
			}
			return res.marshalled()
		}
	}
	return s.site.Page(r, po)
}

// marshalled is res as the server takes it: its props marshalled, its windows in seconds.
func (res Result) marshalled() (*server.Result, error) {
	props, err := marshalProps(res.Props)
	if err != nil {
		return nil, err
	}
	status, redirectStatus := res.Status, 0
	if res.Redirect != "" {
		status, redirectStatus = 0, res.Status
	}
	return &server.Result{
		Props: props, Status: status, Header: res.Header, Redirect: res.Redirect, RedirectStatus: redirectStatus,
		NotFound: res.NotFound, MaxAgeSeconds: uint32(res.MaxAge / time.Second), Tags: res.Tags,
		Deferred: deferredJSON(res.Deferred), Head: string(res.Head),
	}, nil
}

// deferredJSON gives each Deferred as the edge calls it: its value as JSON.
func deferredJSON(funcs map[string]Deferred) map[string]server.DeferredFunc {
	if len(funcs) == 0 {
		return nil
	}
	out := make(map[string]server.DeferredFunc, len(funcs))
	for name, f := range funcs {
		if f == nil {
			out[name] = nil // the edge names it
			continue
		}
		out[name] = func(ctx context.Context) ([]byte, error) { return valueJSON(f(ctx)) }
	}
	return out
}

// requestJSON gives each RequestValue as the edge calls it: its value as JSON.
func requestJSON(funcs map[string]RequestValue) map[string]server.RequestFunc {
	if len(funcs) == 0 {
		return nil
	}
	out := make(map[string]server.RequestFunc, len(funcs))
	for name, f := range funcs {
		out[name] = func(r *http.Request) ([]byte, error) { return valueJSON(f(r)) }
	}
	return out
}

// valueJSON is a Deferred's or a RequestValue's value as JSON (a json.RawMessage as it is).
func valueJSON(v any, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	if raw, ok := v.(json.RawMessage); ok {
		if !json.Valid(raw) {
			return nil, errors.New("the value is a json.RawMessage that is not valid JSON")
		}
		return raw, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("the value is not JSON: %w", err)
	}
	return b, nil
}

// errPropsNotObject is a Loader's props that are not a JSON object.
var errPropsNotObject = errors.New("props must be a JSON object")

// marshalProps gives props as the JSON object they cross the hop as. json.Marshal's output is
// valid JSON without a scan (only a RawMessage is scanned): on the hot path of every render.
func marshalProps(props any) ([]byte, error) {
	switch p := props.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		if len(p) == 0 {
			return nil, nil
		}
		if !json.Valid(p) || bytes.TrimLeft(p, " \t\r\n")[0] != '{' {
			return nil, errPropsNotObject
		}
		return p, nil
	}
	b, err := json.Marshal(props)
	if err != nil {
		return nil, fmt.Errorf("props are not JSON: %w", err)
	}
	if b[0] != '{' {
		return nil, errPropsNotObject
	}
	return b, nil
}

// ErrFallback is what Render's error wraps when the page was not rendered on the server
// and the response is the client-side-render document (X-SSR-Fallback names why).
var ErrFallback = errors.New("the page was not rendered on the server")

// Render answers r with page as res decides, uncached, within Timeouts.Render: for one page
// inside a handler of the shop's own. res is what a Loader would return: its Props,
// Status (the response's status: do not call w.WriteHeader before Render), Header,
// Redirect and NotFound hold as they do for a Page. The response has been written when
// Render returns; the error (wrapping ErrFallback) says that it is the client-side-render
// document, and why, for the handler's logs and metrics.
func (s *Server) Render(w http.ResponseWriter, r *http.Request, page string, res Result) error {
	loaded, err := res.marshalled()
	if reason := s.site.RespondWith(w, r, page, loaded, err); reason != "" {
		return fmt.Errorf("ssr: page %q: %w (%s)", page, ErrFallback, reason)
	}
	return nil
}
