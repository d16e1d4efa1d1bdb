package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

// sampleValues give each key of the file a valid value that is none of its defaults, in
// YAML: the mapping test sets each alone and looks where it lands.
var sampleValues = map[string]string{
	"listen": `":8081"`, "admin_listen": `"127.0.0.1:9101"`, "assets_dir": "other/client", "render_timeout": "151ms",
	"hard_timeout": "2001ms", "max_page_mb": "17", "read_header_timeout": "6s", "read_timeout": "0s", "write_timeout": "31s",
	"idle_timeout": "121s", "shutdown_timeout": "11s", "shutdown_delay": "3s", "max_header_bytes": "8192",
	"max_connections": "99", "max_connections_per_client": "7", "trusted_proxies": `["10.0.0.0/8", "192.0.2.1"]`, "log_level": "debug", "admin_token": "t0ken",
	"cache_max_mb": "257", "render_slots": "65", "early_hints": "false", "shared_cache_address": "redis://cache:6379/0",
	"shared_cache_key": `"0123456789abcdef0123456789abcdef"`, "otlp_endpoint": "http://collector:4317",
	"trace_sample_ratio": "0.5", "stream_timeout": "1001ms",
	// A route's keys, set on the one route of the file.
	"pattern": `"GET /b/{id}"`, "page": "b", "variants": `["header:X-Region"]`, "stream": "true", "per_request": `{cart: "cookie:cart"}`,
	"cache.ttl": "1m", "cache.stale_while_revalidate": "2m", "cache.stale_if_error": "3m",
	"cache.query": `[q]`, "cache.personalize_cookies": "[session]",
	"renderer.grpc_address": `"unix:///run/r.sock"`,
}

// binaryKeys are the keys no option of the package's takes: the binary's own, and why.
var binaryKeys = map[string]string{
	"log_level":          "the binary makes Options.Logger at this level",
	"otlp_endpoint":      "the binary makes Options.TracerProvider sending there",
	"trace_sample_ratio": "the binary makes Options.TracerProvider sampling so",
	"page":               "the page's name, Page's first argument",
}

// notFromFile are the options no key sets, and why.
var notFromFile = map[string]string{
	"Options.Nonce":          "a Go function (the shop's CSP middleware)",
	"Options.CompressHTML":   "the HTML of the shop's own handlers: the binary has none",
	"Options.TracerProvider": "made by the binary from otlp_endpoint and trace_sample_ratio",
	"Options.Registerer":     "the binary's registry, which its admin listener serves",
	"Options.Logger":         "made by the binary at log_level",
	"PageOptions.Load":       "a Go function: the binary's pages load in the renderer",
}

// snapshot is every option c sets, by path ("Options.CacheMaxBytes", "http.Server.Addr",
// "PageOptions.Stream" for its first route), with the first route's pattern and name.
func snapshot(c *Config) map[string]any {
	out := map[string]any{}
	leaves("Options", reflect.ValueOf(c.Options()), out)
	leaves("ServeOptions", reflect.ValueOf(c.ServeOptions()), out)
	public := c.PublicServer()
	for _, f := range []string{"Addr", "ReadHeaderTimeout", "ReadTimeout", "WriteTimeout", "IdleTimeout", "MaxHeaderBytes"} {
		out["http.Server."+f] = reflect.ValueOf(public).Elem().FieldByName(f).Interface()
	}
	page := c.Pages()[0]
	leaves("PageOptions", reflect.ValueOf(page.Options), out)
	out["Page.Pattern"], out["Page.Name"] = page.Pattern, page.Name
	out["binary.LogLevel"], out["binary.OTLPEndpoint"], out["binary.TraceSampleRatio"] = c.Edge.SlogLevel(), c.Edge.OTLPEndpoint, c.Edge.TraceSampleRatio
	return out
}

// leaves puts each exported field of the struct v that is not itself a struct in out, by
// its path from prefix.
func leaves(prefix string, v reflect.Value, out map[string]any) {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		path := prefix + "." + f.Name
		if f.Type.Kind() == reflect.Struct {
			leaves(path, v.Field(i), out)
			continue
		}
		out[path] = v.Field(i).Interface()
	}
}

// fileKeys are the file's keys: the edge section's, a route's ("pattern", "cache.ttl"),
// and the renderer key the edge reads.
func fileKeys() (edge, route []string) {
	for f := range reflect.TypeFor[Edge]().Fields() {
		if key := f.Tag.Get("yaml"); key != "routes" {
			edge = append(edge, key)
		}
	}
	for f := range reflect.TypeFor[Route]().Fields() {
		if key := f.Tag.Get("yaml"); key != "cache" {
			route = append(route, key)
		}
	}
	for f := range reflect.TypeFor[RouteCache]().Fields() {
		route = append(route, "cache."+f.Tag.Get("yaml"))
	}
	return edge, route
}

// cachedRoute is a route's cache section that caches it, for the keys that need it.
const cachedRoute = "      cache:\n        ttl: 1m\n        query: []\n"

// load loads a file of the route "GET /a" (page a), with yaml added to its edge section,
// route and renderer section.
func load(t *testing.T, edge, route, renderer string) *Config {
	t.Helper()
	file := fmt.Sprintf("edge:\n%s  routes:\n    - pattern: \"GET /a\"\n      page: a\n%srenderer:\n%s", edge, route, renderer)
	cfg, err := Load(writeFile(t, file), nil)
	if err != nil {
		t.Fatalf("%s\n%v", file, err)
	}
	return cfg
}

// TestEveryKeyReachesAnOption: set alone, each key of the file changes the option
// optionKeys says it sets, and nothing else (or, for the binary's own keys, what the
// binary makes of it); every option is set by a key or is named in notFromFile with why.
func TestEveryKeyReachesAnOption(t *testing.T) {
	plain := snapshot(load(t, "", "", ""))
	declared := snapshot(load(t, "", "      cache:\n        query: []\n", ""))
	cached := snapshot(load(t, "", cachedRoute, ""))
	reached := map[string]bool{}
	check := func(key, fullKey string, cfg *Config) {
		t.Helper()
		base := plain
		if cfg.Edge.Routes[0].Cache.Query != nil && key != "cache.query" {
			base = declared // the route said its query, as a cached one must
		}
		if cfg.Edge.Routes[0].Cache.TTL != 0 && key != "cache.ttl" {
			base = cached // a key that needs a cached route
		}
		var changed []string
		for path, v := range snapshot(cfg) {
			if !reflect.DeepEqual(v, base[path]) {
				changed = append(changed, path)
				reached[path] = true
			}
		}
		if len(changed) == 0 {
			t.Errorf("%s: set to %s, it changes no option", fullKey, sampleValues[key])
		}
		for _, path := range changed {
			switch {
			case strings.HasPrefix(path, "binary.") || strings.HasPrefix(path, "Page."):
				if _, ok := binaryKeys[key]; !ok && key != "pattern" {
					t.Errorf("%s changes %s, the binary's own, but binaryKeys does not list it", fullKey, path)
				}
			case optionKeys[path] != fullKey:
				t.Errorf("%s changes %s, but optionKeys[%q] = %q", fullKey, path, path, optionKeys[path])
			}
		}
	}
	edgeKeys, routeKeys := fileKeys()
	for _, key := range edgeKeys {
		v, ok := sampleValues[key]
		if !ok {
			t.Errorf("edge.%s: no sample value: add one to sampleValues", key)
			continue
		}
		check(key, "edge."+key, load(t, "  "+key+": "+v+"\n", "", ""))
	}
	for _, key := range routeKeys {
		v, ok := sampleValues[key]
		if !ok {
			t.Errorf("route key %s: no sample value: add one to sampleValues", key)
			continue
		}
		line := "      " + key + ": " + v + "\n"
		if name, ok := strings.CutPrefix(key, "cache."); ok {
			line = "      cache:\n        " + name + ": " + v + "\n"
			if name != "query" && name != "personalize_cookies" {
				line += "        query: []\n" // a cached route says its query
			}
		}
		if key == "per_request" {
			line += cachedRoute
		}
		if key == "stream" || key == "pattern" || key == "page" {
			// Set alone, as the others are: the route's own line is replaced.
			cfg := load(t, "", "", "")
			switch key {
			case "stream":
				cfg = load(t, "", line, "")
			case "pattern":
				cfg.Edge.Routes[0].Pattern = "GET /b/{id}"
			case "page":
				cfg.Edge.Routes[0].Page = "b"
			}
			check(key, key, cfg)
			continue
		}
		check(key, key, load(t, "", line, ""))
	}
	check("renderer.grpc_address", "renderer.grpc_address", load(t, "", "", "  grpc_address: "+sampleValues["renderer.grpc_address"]+"\n"))

	options := map[string]any{}
	leaves("Options", reflect.ValueOf(ssr.Options{}), options)
	leaves("ServeOptions", reflect.ValueOf(ssr.ServeOptions{}), options)
	leaves("PageOptions", reflect.ValueOf(ssr.PageOptions{}), options)
	for path := range options {
		if _, why := notFromFile[path]; !reached[path] && !why {
			t.Errorf("%s: no key of the file sets it; add one, or say why in notFromFile", path)
		}
		if reached[path] && notFromFile[path] != "" {
			t.Errorf("%s: a key sets it, but notFromFile says %q", path, notFromFile[path])
		}
	}
	for path, key := range optionKeys {
		if _, ok := options[path]; !ok && !strings.HasPrefix(path, "http.Server.") {
			t.Errorf("optionKeys[%q] = %q: the package has no such option", path, key)
		}
	}
}
