package ssr

import (
	"errors"
	"net/http"
)

// Typed is a Loader whose props have the Go type P, so that the page's props are declared
// once, in Go, for both sides: ssr-types (edge/cmd/ssr-types) finds each
// Page(name, PageOptions{Load: Typed(...)}) and writes P as the page's TypeScript type,
// which the app's pages are checked against, and as the JSON Schema the renderer checks the
// props it receives against in development (docs/go.md, "Typed props").
//
// load returns the props and the rest of its decision: the Result's Status, Header,
// Redirect, NotFound, MaxAge, Tags and Deferred hold as for any Loader. The
// Result's Props must be nil; a redirect or a not-found page gets no props, since the page
// that answers is not the one P describes. P should be a struct (or a map with string keys):
// its JSON must be an object.
//
// A Loader that returns Result.Props of any type still works; its page is simply not typed.
func Typed[P any](load func(*http.Request) (P, Result, error)) Loader {
	return func(r *http.Request) (Result, error) {
		props, res, err := load(r)
		if err != nil {
			return res, err
		}
		if res.Props != nil {
			return Result{}, errTypedProps
		}
		if res.Redirect == "" && !res.NotFound {
			res.Props = props
		}
		return res, nil
	}
}

var errTypedProps = errors.New("ssr.Typed: the loader set Result.Props; a typed loader's props are its first result")
