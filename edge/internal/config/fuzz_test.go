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
	f.Add([]byte("edge:\n  cache_max_mb: 1\n  cache_max_entry_mb: 2\n"), "")
	f.Add([]byte("edge:\n  routes:\n    - pattern: \"GET /{$}\"\n      page: home\n      variants: [\"header:x\"]\n      cache: {ttl: 1m, query: [a]}\n"), "SSR_EDGE_CACHE_TTL_JITTER=0.5")
	f.Add([]byte("renderer:\n  grpc_address: \"\"\n"), "SSR_EDGE_LISTEN=:0")
	f.Fuzz(func(t *testing.T, data []byte, env string) {
		base, err := Defaults()
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
		e := cfg.Edge
		if e.RenderTimeout <= 0 || e.RenderTimeout > e.HardTimeout {
			t.Fatalf("render_timeout %s, hard_timeout %s", e.RenderTimeout, e.HardTimeout)
		}
		if e.MaxPageMB < 1 || e.MaxPropsMB < 1 || e.CacheMaxEntryMB < 1 || e.CacheMaxEntryMB > e.CacheMaxMB || e.MaxRendersInFlight < 1 {
			t.Fatalf("sizes: %+v", e)
		}
		if e.CacheTTLJitter < 0 || e.CacheTTLJitter >= 1 || e.CachePassTTL <= 0 || e.CacheNotFoundTTL < 0 {
			t.Fatalf("cache windows: jitter %v, pass %s, not found %s", e.CacheTTLJitter, e.CachePassTTL, e.CacheNotFoundTTL)
		}
		if len(e.Routes) == 0 || cfg.Renderer.GRPCAddress == "" || e.AssetsDir == "" || e.NotFoundPage == "" {
			t.Fatalf("missing: routes %d, renderer %q, assets %q, not found %q", len(e.Routes), cfg.Renderer.GRPCAddress, e.AssetsDir, e.NotFoundPage)
		}
		mux := http.NewServeMux()
		mux.HandleFunc(NotFoundPattern, http.NotFound)
		for _, r := range e.Routes {
			soft, hard := r.EffectiveTimeouts(e)
			if soft <= 0 || soft > hard || r.Page == "" {
				t.Fatalf("route %+v: soft %s, hard %s", r, soft, hard)
			}
			if err := register(mux, r.Pattern); err != nil { // the edge mounts them all on one mux
				t.Fatalf("route %q does not mount: %v", r.Pattern, err)
			}
		}
	})
}
