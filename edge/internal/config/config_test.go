package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

func writeFile(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ssr.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDefaults(t *testing.T) {
	cfg, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.Edge
	if e.Listen != ":8080" || e.AdminListen != "127.0.0.1:9100" {
		t.Errorf("got listeners %q %q, want :8080 127.0.0.1:9100", e.Listen, e.AdminListen)
	}
	if e.RenderTimeout != 150*time.Millisecond || e.HardTimeout != 2*time.Second {
		t.Errorf("got timeouts %s/%s, want 150ms/2s", e.RenderTimeout, e.HardTimeout)
	}
	if cfg.Renderer.GRPCAddress != "unix:///tmp/sidecar-ssr/renderer.sock" {
		t.Errorf("got renderer address %q", cfg.Renderer.GRPCAddress)
	}
	if len(e.Routes) != 3 || e.Routes[0].Pattern != "GET /{$}" || e.Routes[0].Page != "home" || !e.Routes[2].Stream {
		t.Errorf("got routes %+v, want the demo's", e.Routes)
	}
}

func TestFileAndEnvOverlay(t *testing.T) {
	path := writeFile(t, `
edge:
  render_timeout: 80ms
  routes:
    - pattern: "GET /x/{slug}"
      page: x
      hard_timeout: 500ms
      variants: ["header:Accept-Language", "cookie:currency"]
renderer:
  grpc_address: unix:///run/ssr/renderer.sock
  threads: 4
`)
	cfg, err := Load(path, []string{"SSR_EDGE_LISTEN=127.0.0.1:0", "SSR_EDGE_HARD_TIMEOUT=3s", "SSR_EDGE_EARLY_HINTS=false", "SSR_RENDERER_THREADS=2", "PATH=/bin"})
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.Edge
	if e.RenderTimeout != 80*time.Millisecond {
		t.Errorf("file: got render_timeout %s, want 80ms", e.RenderTimeout)
	}
	if e.Listen != "127.0.0.1:0" || e.HardTimeout != 3*time.Second {
		t.Errorf("env: got listen %q hard_timeout %s", e.Listen, e.HardTimeout)
	}
	if e.EarlyHints {
		t.Errorf("env: early_hints is still true")
	}
	if e.AdminListen != "127.0.0.1:9100" {
		t.Errorf("untouched key lost its default: admin_listen %q", e.AdminListen)
	}
	if len(e.Routes) != 1 || e.Routes[0].Page != "x" {
		t.Errorf("routes: got %+v, want the file's list only", e.Routes)
	}
	if got := cfg.Options().Timeouts.Render; got != 80*time.Millisecond {
		t.Errorf("Options.Timeouts.Render: got %s, want 80ms", got)
	}
	if got := cfg.Pages()[0].Options.Timeouts; got != (ssr.Timeouts{Hard: 500 * time.Millisecond}) {
		t.Errorf("the route's PageOptions.Timeouts: got %+v, want only Hard, 500ms", got)
	}
	if cfg.Renderer.GRPCAddress != "unix:///run/ssr/renderer.sock" {
		t.Errorf("shared renderer key: got %q", cfg.Renderer.GRPCAddress)
	}
}

func TestRejected(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		env     []string
		wantErr string
	}{
		{"unknown edge key", "edge:\n  listne: ':1'\n", nil, "edge.listne: unknown key (line 2)"},
		{"unknown route key", "edge:\n  routes:\n    - pattern: GET /a\n      pge: a\n", nil, "edge.routes[].pge: unknown key"},
		{"unknown section", "edgy:\n  listen: ':1'\n", nil, "edgy: unknown key"},
		{"unknown env key", "", []string{"SSR_EDGE_LISTNE=:1"}, "SSR_EDGE_LISTNE: no key edge.listne"},
		{"routes from env", "", []string{"SSR_EDGE_ROUTES=x"}, "edge.routes can only be set in the config file"},
		{"bad duration", "", []string{"SSR_EDGE_RENDER_TIMEOUT=soon"}, `edge.render_timeout: not a duration: "soon"`},
		{"bad boolean", "", []string{"SSR_EDGE_EARLY_HINTS=maybe"}, `edge.early_hints: not a boolean: "maybe"`},
		{"soft above hard", "edge:\n  render_timeout: 3s\n", nil, "edge.render_timeout: 3s is above edge.hard_timeout 2s"},
		{"route soft above hard", "edge:\n  routes:\n    - {pattern: 'GET /a', page: a, hard_timeout: 100ms}\n", nil, "edge.routes[0].render_timeout: 150ms is above the page's hard timeout (edge.routes[0].hard_timeout) 100ms"},
		{"stream deadline past hard", "edge:\n  routes:\n    - {pattern: 'GET /a', page: a, stream: true, stream_timeout: 3s}\n", nil, "edge.routes[0].stream_timeout: 3s must lie between the page's render timeout (edge.routes[0].render_timeout) 150ms and its hard timeout (edge.routes[0].hard_timeout) 2s"},
		{"stream deadline before soft", "edge:\n  routes:\n    - {pattern: 'GET /a', page: a, stream: true, stream_timeout: 100ms}\n", nil, "edge.routes[0].stream_timeout: 100ms must lie between"},
		{"conflicting routes", "edge:\n  routes:\n    - {pattern: 'GET /a/{x}', page: a}\n    - {pattern: 'GET /{y}/b', page: b}\n", nil, "edge.routes[1].pattern: pattern \"GET /{y}/b\""},
		{"duplicate route", "edge:\n  routes:\n    - {pattern: 'GET /a', page: a}\n    - {pattern: 'GET /a', page: b}\n", nil, "edge.routes[1].pattern"},
		{"route without GET", "edge:\n  routes:\n    - {pattern: '/a', page: a}\n", nil, `edge.routes[0].pattern: must start with "GET "`},
		{"route without page", "edge:\n  routes:\n    - {pattern: 'GET /a'}\n", nil, "edge.routes[0].page: must be set"},
		{"bad variant", "edge:\n  routes:\n    - {pattern: 'GET /a', page: a, variants: [locale]}\n", nil, "edge.routes[0].variants[0]"},
		{"bad per-request part", "edge:\n  routes:\n    - {pattern: 'GET /a', page: a, per_request: {cart: session}, cache: {ttl: 1m, query: []}}\n", nil, `edge.routes[0].per_request["cart"]`},
		{"per-request value, uncached", "edge:\n  routes:\n    - {pattern: 'GET /a', page: a, per_request: {cart: 'cookie:cart'}}\n", nil, "edge.routes[0].per_request"},
		{"per-request value, bad name", "edge:\n  routes:\n    - {pattern: 'GET /a', page: a, per_request: {'a b': 'cookie:cart'}, cache: {ttl: 1m, query: []}}\n", nil, `edge.routes[0].per_request["a b"]`},
		{"cached route without its query", "edge:\n  routes:\n    - {pattern: 'GET /a', page: a, cache: {ttl: 1m}}\n", nil, "edge.routes[0].cache.query: must list the query parameters the page reads ([] for none)"},
		{"bad listen", "", []string{"SSR_EDGE_LISTEN=8080"}, `edge.listen: want host:port, got "8080"`},
		{"zero page size", "edge:\n  max_page_mb: 0\n", nil, "edge.max_page_mb: must be at least 1"},
		{"short store key", "", []string{"SSR_EDGE_SHARED_CACHE_KEY=short"}, "edge.shared_cache_key: must be at least 32 bytes, got 5"},
		{"bad log level", "edge:\n  log_level: loud\n", nil, "edge.log_level"},
		{"sample ratio above 1", "", []string{"SSR_EDGE_TRACE_SAMPLE_RATIO=2"}, "edge.trace_sample_ratio: must be in [0, 1]"},
		{"no routes", "edge:\n  routes: []\n", nil, "edge.routes: at least one route is needed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.yaml != "" {
				path = writeFile(t, tt.yaml)
			}
			_, err := Load(path, tt.env)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestOTLPEndpoints runs the cases renderer/test/config.test.js runs too: the edge and the
// renderer accept the same collector URLs.
func TestOTLPEndpoints(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "otlp_endpoints.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases struct{ Valid, Invalid []string }
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	for _, endpoint := range cases.Valid {
		if cfg, err := Load("", []string{"SSR_EDGE_OTLP_ENDPOINT=" + endpoint}); err != nil || cfg.Edge.OTLPEndpoint != endpoint {
			t.Errorf("%q: got %v, want it accepted", endpoint, err)
		}
	}
	for _, endpoint := range cases.Invalid {
		const want = "edge.otlp_endpoint: must be an http:// or https:// URL with a port"
		if _, err := Load("", []string{"SSR_EDGE_OTLP_ENDPOINT=" + endpoint}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got error %v, want one containing %q", endpoint, err, want)
		}
	}
}

func TestEmptyFileKeepsDefaults(t *testing.T) {
	cfg, err := Load(writeFile(t, ""), nil)
	if err != nil || cfg.Edge.Listen != ":8080" {
		t.Errorf("got %v, %v; want the defaults", cfg, err)
	}
}

// TestErrorsAreKeyErrors: every broken rule, the file's own or the public package's, is
// one *KeyError naming its key, once.
func TestErrorsAreKeyErrors(t *testing.T) {
	path := writeFile(t, "edge:\n  max_page_mb: -1\n  stream_timeout: -1s\n  routes:\n    - {pattern: 'GET /a', variants: [locale]}\n")
	_, err := Load(path, nil)
	var got []string
	for _, err := range err.(interface{ Unwrap() []error }).Unwrap() {
		ke, ok := errors.AsType[*KeyError](err)
		if !ok {
			t.Fatalf("got %T %v, want a *KeyError", err, err)
		}
		got = append(got, ke.Key+": "+ke.Msg)
	}
	slices.Sort(got)
	want := []string{
		"edge.max_page_mb: must be at least 1, got -1",
		"edge.routes[0].page: must be set",
		`edge.routes[0].variants[0]: want "header:Name" or "cookie:name", got "locale"`,
		"edge.stream_timeout: must be positive, got -1s",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
