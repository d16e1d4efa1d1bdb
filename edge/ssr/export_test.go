package ssr

import "net/http"

// What the external tests (defaults_test.go) hold against the edge binary's defaults.
var (
	WithDefaults      = Options.withDefaults
	ServeWithDefaults = func(o ServeOptions, public *http.Server) ServeOptions { return o.withDefaults(public) }
)
