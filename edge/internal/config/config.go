// Package config loads the edge binary's configuration: embedded defaults, overlaid by one
// YAML file shared with the renderer, overlaid by SSR_EDGE_<KEY> environment variables; and
// gives it as the public package's options (options.go), which that package validates.
package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

//go:embed defaults.yaml
var defaultsYAML []byte

// Config is what the edge needs from the shared file.
type Config struct {
	Edge     Edge
	Renderer Renderer
}

// Edge is the `edge:` section. Every scalar key can be overridden by SSR_EDGE_<KEY>.
type Edge struct {
	Listen      string `yaml:"listen"`
	AdminListen string `yaml:"admin_listen"`
	// AssetsDir holds the client build: manifest.json and assets/.
	AssetsDir string `yaml:"assets_dir"`
	// RenderTimeout is how long a request waits for a render before it falls back.
	RenderTimeout time.Duration `yaml:"render_timeout"`
	// HardTimeout is the gRPC deadline of a render; past it the renderer aborts the render.
	HardTimeout time.Duration `yaml:"hard_timeout"`
	// MaxPageMB bounds a render response; a larger page falls back instead of failing.
	MaxPageMB int `yaml:"max_page_mb"`

	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	ReadTimeout       time.Duration `yaml:"read_timeout"`
	WriteTimeout      time.Duration `yaml:"write_timeout"`
	IdleTimeout       time.Duration `yaml:"idle_timeout"`
	ShutdownTimeout   time.Duration `yaml:"shutdown_timeout"`
	// ShutdownDelay keeps serving, with readiness false, for this long after SIGTERM before
	// the listener closes, so load balancers stop sending first.
	ShutdownDelay  time.Duration `yaml:"shutdown_delay"`
	MaxHeaderBytes int           `yaml:"max_header_bytes"`
	// MaxConnections caps the public listener's open connections. Each costs its buffers, and
	// one whose client stops reading holds its response until write_timeout: without a cap,
	// clients could add them up at will. Past it, a newcomer takes the slot of the connection
	// whose client stopped reading longest ago, else of the one idle longest.
	MaxConnections int `yaml:"max_connections"`
	// MaxConnectionsPerClient caps one client address's: past it, its newcomers are refused.
	MaxConnectionsPerClient int `yaml:"max_connections_per_client"`
	// TrustedProxies are the proxies in front of the edge (addresses or CIDR prefixes): their
	// connections are not bound per client, and a request on one counts as the client its
	// X-Forwarded-For names.
	TrustedProxies []string `yaml:"trusted_proxies"`
	LogLevel       string   `yaml:"log_level"`
	// AdminToken admits callers bearing it to the admin port's debug and purge endpoints,
	// which no one else reaches: not even loopback callers, since in a pod the renderer's app
	// code (a load() that fetches a URL it was given) shares the loopback.
	AdminToken string `yaml:"admin_token"`
	// CacheMaxMB bounds the HTML cache by bytes (W-TinyLFU: what is asked for again stays);
	// a document above a 16th of it is not stored.
	CacheMaxMB int `yaml:"cache_max_mb"`
	// RenderSlots caps the renders that take CPU at once, background ones included:
	// a page's Go loader, then its render call (up to the shell, for a page that streams).
	// A render that only waits for data holds none: a streamed page past its shell, a page
	// waiting for its deferred values (a page's own load() in the renderer holds one while
	// it waits: the edge cannot tell that wait from rendering). Past it a request gets a
	// stale copy or the client-side-render shell at once.
	RenderSlots int `yaml:"render_slots"`
	// EarlyHints sends 103 Early Hints with the client build's scripts and styles before a
	// request waits for its render. Turn it off behind a proxy that mishandles 1xx.
	EarlyHints bool `yaml:"early_hints"`
	// SharedCacheAddress turns on the cache's second level, shared by every replica: a
	// Redis or Valkey at redis://host:port/db, rediss://…, or unix:///path. Empty: off.
	// Each call to it waits 25ms at most; past that the edge goes on without it.
	SharedCacheAddress string `yaml:"shared_cache_address"`
	// SharedCacheKey, if set, authenticates every value in that store (HMAC-SHA256): a value
	// that something else wrote there is a miss. At least 32 bytes, the same on every
	// replica; from a Secret.
	SharedCacheKey string `yaml:"shared_cache_key"`
	// OTLPEndpoint is the OpenTelemetry collector that receives the edge's spans, over
	// OTLP/gRPC: http://host:port, or https:// for TLS. Empty: tracing off.
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	// TraceSampleRatio is the share of traces that start at the edge which are kept; a
	// request whose traceparent says sampled (or not) is followed.
	TraceSampleRatio float64 `yaml:"trace_sample_ratio"`
	// StreamTimeout is how long after a request's arrival a page that streams may keep
	// Suspense boundaries pending: past it the edge closes the document and the browser renders
	// those boundaries itself; the render goes on to hard_timeout and fills the cache.
	StreamTimeout time.Duration `yaml:"stream_timeout"`

	Routes []Route `yaml:"routes"`
}

// RouteCache is a route's cache policy. A zero TTL means the route is not cached.
type RouteCache struct {
	TTL                  time.Duration `yaml:"ttl"`
	StaleWhileRevalidate time.Duration `yaml:"stale_while_revalidate"`
	StaleIfError         time.Duration `yaml:"stale_if_error"`
	// Query lists the query parameters the page depends on; the others are left out of the
	// key and of the render. A cached route must set it ([] for none): a parameter no page
	// reads must not buy a render. Unset on an uncached route: all but the tracking ones
	// (utm_*, fbclid, gclid, msclkid, mc_cid, mc_eid) reach the render.
	Query []string `yaml:"query"`
	// PersonalizeCookies name cookies whose presence makes a request personal: it bypasses
	// the cache.
	PersonalizeCookies []string `yaml:"personalize_cookies"`
}

// Route maps a ServeMux pattern to a page of the app.
type Route struct {
	// Pattern is a Go ServeMux pattern with method GET, e.g. "GET /products/{id}".
	Pattern string `yaml:"pattern"`
	Page    string `yaml:"page"`
	// RenderTimeout and HardTimeout override the edge-wide values when set.
	RenderTimeout time.Duration `yaml:"render_timeout"`
	HardTimeout   time.Duration `yaml:"hard_timeout"`
	// Variants name the request parts the page depends on: "header:Accept-Language",
	// "cookie:currency". They are sent to the renderer and are part of the cache key.
	Variants []string   `yaml:"variants"`
	Cache    RouteCache `yaml:"cache"`
	// Stream renders the page with React's renderToPipeableStream: the shell is sent as soon
	// as it is ready and each Suspense boundary as it resolves (docs/architecture.md,
	// "Streaming pages").
	Stream bool `yaml:"stream"`
	// StreamTimeout overrides edge.stream_timeout when set.
	StreamTimeout time.Duration `yaml:"stream_timeout"`
	// PerRequest makes the page partially prerendered (docs/go.md, "Partial prerendering"):
	// its shell is cached, and each request's holes are rendered with its own values, each
	// named here and read from a part of the request, "cookie:name" or "header:Name" (the
	// page gets the part's value as a string, null when the request has none).
	PerRequest map[string]string `yaml:"per_request"`
}

// Renderer holds the renderer keys the edge shares; the renderer validates its own section.
type Renderer struct {
	GRPCAddress string `yaml:"grpc_address"`
}

type file struct {
	Edge     Edge      `yaml:"edge"`
	Renderer yaml.Node `yaml:"renderer"`
}

// Load builds the configuration from the defaults, the file at path (if not empty) and the
// environment, and validates it. Any error names the offending key.
func Load(path string, environ []string) (*Config, error) {
	cfg, err := defaults()
	if err != nil {
		return nil, err
	}
	if path == "" {
		return finish(cfg, environ)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return parse(cfg, data, path, environ)
}

// defaults is the configuration of the embedded defaults (defaults.yaml), not validated.
func defaults() (*Config, error) {
	var f file
	if err := decodeStrict(defaultsYAML, &f); err != nil {
		return nil, fmt.Errorf("config: embedded defaults: %w", err)
	}
	cfg := &Config{Edge: f.Edge}
	if err := f.Renderer.Decode(&cfg.Renderer); err != nil {
		return nil, fmt.Errorf("config: embedded defaults: %w", err)
	}
	return cfg, nil
}

// parse overlays the file's data (read from path) on cfg, then the environment, and
// validates the result.
func parse(cfg *Config, data []byte, path string, environ []string) (*Config, error) {
	f := file{Edge: cfg.Edge}
	if err := decodeStrict(data, &f); err != nil {
		return nil, fmt.Errorf("config: %s: %w", path, err)
	}
	cfg.Edge = f.Edge
	if !f.Renderer.IsZero() {
		// Only the shared keys matter here: unknown renderer keys are the renderer's to reject.
		if err := f.Renderer.Decode(&cfg.Renderer); err != nil {
			return nil, fmt.Errorf("config: %s: renderer: %w", path, err)
		}
	}
	return finish(cfg, environ)
}

// finish applies the environment's overrides to cfg and validates it.
func finish(cfg *Config, environ []string) (*Config, error) {
	if err := applyEnv(cfg, environ); err != nil {
		return nil, err
	}
	if err := validate(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// A KeyError is one broken rule of one key: Key is the key's path in the file
// ("edge.max_page_mb", "edge.routes[2].page"), Msg what is wrong with its value. The
// message may name other keys by their paths.
type KeyError struct {
	Key, Msg string
}

func (e *KeyError) Error() string { return "config: " + e.Key + ": " + e.Msg }

var unknownField = regexp.MustCompile(`line (\d+): field (\S+) not found in type config\.(\w+)`)

func decodeStrict(data []byte, into *file) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(into)
	if err == nil || errors.Is(err, io.EOF) { // an empty file overrides nothing
		return nil
	}
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		section := map[string]string{"file": "", "Edge": "edge.", "Route": "edge.routes[].", "RouteCache": "edge.routes[].cache."}[m[3]]
		return fmt.Errorf("%s%s: unknown key (line %s)", section, m[2], m[1])
	}
	return err
}

// applyEnv overrides scalar keys from SSR_EDGE_<KEY> and the shared SSR_RENDERER_GRPC_ADDRESS.
func applyEnv(cfg *Config, environ []string) error {
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		switch {
		case name == "SSR_RENDERER_GRPC_ADDRESS":
			cfg.Renderer.GRPCAddress = value
		case strings.HasPrefix(name, "SSR_EDGE_"):
			key := strings.ToLower(strings.TrimPrefix(name, "SSR_EDGE_"))
			if err := setScalar(&cfg.Edge, key, value); err != nil {
				return fmt.Errorf("config: %s: %w", name, err)
			}
		}
	}
	return nil
}

var durationType = reflect.TypeFor[time.Duration]()

// otlpEndpoint is a collector's URL: the scheme says TLS or not, and the port is never
// guessed (the renderer's renderer.otlp_endpoint takes the same form).
var otlpEndpoint = regexp.MustCompile(`^https?://(\[[0-9a-fA-F:.]+\]|[^\s/:@\[\]]+):\d{1,5}/?$`)

func setScalar(edge *Edge, key, value string) error {
	v := reflect.ValueOf(edge).Elem()
	for i := range v.NumField() {
		if v.Type().Field(i).Tag.Get("yaml") != key {
			continue
		}
		field := v.Field(i)
		switch {
		case field.Type() == durationType:
			d, err := time.ParseDuration(value)
			if err != nil {
				return fmt.Errorf("edge.%s: not a duration: %q", key, value)
			}
			field.SetInt(int64(d))
		case field.Kind() == reflect.String:
			field.SetString(value)
		case field.Kind() == reflect.Int:
			n, err := strconv.Atoi(value)
			if err != nil {
				return fmt.Errorf("edge.%s: not an integer: %q", key, value)
			}
			field.SetInt(int64(n))
		case field.Kind() == reflect.Bool:
			b, err := strconv.ParseBool(value)
			if err != nil {
				return fmt.Errorf("edge.%s: not a boolean: %q", key, value)
			}
			field.SetBool(b)
		case field.Kind() == reflect.Float64:
			f, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return fmt.Errorf("edge.%s: not a number: %q", key, value)
			}
			field.SetFloat(f)
		default:
			return fmt.Errorf("edge.%s can only be set in the config file", key)
		}
		return nil
	}
	return fmt.Errorf("no key edge.%s", key)
}

// NotFoundPattern catches every GET no route matches; it renders the app's not-found page.
const NotFoundPattern = "GET /"

var levels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// SlogLevel is log_level as a slog level.
func (e Edge) SlogLevel() slog.Level { return levels[e.LogLevel] }
