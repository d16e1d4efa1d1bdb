package config

import (
	"net/http"
	"strings"
	"testing"
)

// FuzzLoad: any config file and SSR_EDGE_ variable either stop the start with an error
// that says "config:", or give a configuration that holds every invariant the edge relies
// on (it then builds its servers and cache from it without checking again).
func FuzzLoad(f *testing.F) {
	f.Add([]byte(""), "")
	f.Add([]byte("edge:\n  render_timeout: 3s\n"), "SSR_EDGE_HARD_TIMEOUT=1s")
	f.Add([]byte("edge:\n  routes:\n    - {pattern: \"GET /p/{id}\", page: p, render_timeout: 5s}\n"), "")
	f.Add([]byte("edge:\n  cache_max_mb: 1\n  max_page_mb: 2\n"), "")
	f.Add([]byte("edge:\n  routes:\n    - pattern: \"GET /{$}\"\n      page: home\n      variants: [\"header:x\"]\n      cache: {ttl: 1m, query: [a]}\n"), "SSR_EDGE_STREAM_TIMEOUT=500ms")
	f.Add([]byte("renderer:\n  grpc_address: \"\"\n"), "SSR_EDGE_LISTEN=:0")
	f.Fuzz(func(t *testing.T, data []byte, env string) {
		base, err := defaults()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := parse(base, data, "fuzz.yaml", []string{env})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "config: ") {
				t.Fatalf("an error that does not say it is the config's: %v", err)
			}
			return
		}
		o := cfg.Options()
		if err := o.Validate(); err != nil {
			t.Fatalf("the options of a valid file are not: %v", err)
		}
		if err := cfg.ServeOptions().Validate(); err != nil {
			t.Fatalf("the serve options of a valid file are not: %v", err)
		}
		if len(cfg.Pages()) == 0 || cfg.Renderer.GRPCAddress == "" || cfg.Edge.AssetsDir == "" {
			t.Fatalf("missing: routes %d, renderer %q, assets %q", len(cfg.Pages()), cfg.Renderer.GRPCAddress, cfg.Edge.AssetsDir)
		}
		mux := http.NewServeMux()
		mux.HandleFunc(NotFoundPattern, http.NotFound)
		for _, p := range cfg.Pages() {
			if err := p.Options.Validate(o); err != nil || p.Name == "" {
				t.Fatalf("route %+v: %v", p, err)
			}
			if err := register(mux, p.Pattern); err != nil { // the edge mounts them all on one mux
				t.Fatalf("route %q does not mount: %v", p.Pattern, err)
			}
		}
	})
}
