package ssr

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/config"
)

// configKeys is every scalar or list key of c, "edge.max_page_mb" or
// "renderer.grpc_address", with its value (edge.routes left out).
func configKeys(c *config.Config) map[string]any {
	keys := map[string]any{}
	for section, v := range map[string]reflect.Value{"edge": reflect.ValueOf(c.Edge), "renderer": reflect.ValueOf(c.Renderer)} {
		for i := range v.NumField() {
			if tag := v.Type().Field(i).Tag.Get("yaml"); tag != "routes" {
				keys[section+"."+tag] = v.Field(i).Interface()
			}
		}
	}
	return keys
}

// sample sets v, an Options field, to a value that is neither zero nor any default, and
// reports whether it could: functions, interfaces and pointers (Logger, Nonce...) set no
// config key.
func sample(t *testing.T, name string, v reflect.Value) bool {
	switch {
	case v.Type() == reflect.TypeFor[time.Duration]():
		v.SetInt(int64(7777 * time.Millisecond))
	case v.Kind() == reflect.String:
		v.SetString("sample-" + name)
	case v.Kind() == reflect.Int:
		v.SetInt(7777)
	case v.Kind() == reflect.Float64:
		v.SetFloat(0.37)
	case v.Kind() == reflect.Bool:
		v.SetBool(true)
	case v.Type() == reflect.TypeFor[[]string]():
		v.Set(reflect.ValueOf([]string{"sample"}))
	case v.Type() == reflect.TypeFor[[]byte]():
		v.SetBytes([]byte("sample-" + name))
	case v.Kind() == reflect.Func, v.Kind() == reflect.Interface, v.Kind() == reflect.Pointer:
		return false
	default:
		t.Fatalf("Options.%s: no sample value for a %s: teach sample one", name, v.Type())
	}
	return true
}

// TestOptionKeysComplete: optionKeys names, for every config key an Options field sets, that
// field, and nothing else. Each field is set alone to a sample value, and the keys of the
// configuration that changed are the keys it sets.
func TestOptionKeysComplete(t *testing.T) {
	base, err := Options{}.config()
	if err != nil {
		t.Fatal(err)
	}
	baseKeys := configKeys(base)
	sets := map[string][]string{} // field → the keys it sets
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Options]()) {
		var o Options
		if !sample(t, f.Name, reflect.ValueOf(&o).Elem().FieldByIndex(f.Index)) {
			continue
		}
		cfg, err := o.config()
		if err != nil {
			t.Fatal(err)
		}
		for key, v := range configKeys(cfg) {
			if !reflect.DeepEqual(v, baseKeys[key]) {
				sets[f.Name] = append(sets[f.Name], key)
			}
		}
	}
	for field, keys := range sets {
		for _, key := range keys {
			if got := optionKeys[key]; got != field {
				t.Errorf("Options.%s sets %s: got optionKeys[%q] = %q, want %q", field, key, key, got, field)
			}
		}
	}
	for key, field := range optionKeys {
		if !slices.Contains(sets[field], key) {
			t.Errorf("optionKeys[%q] = %q, but Options.%s does not set %s (it sets %v)", key, field, field, key, sets[field])
		}
	}
}

// ifZero is an Options field's default, as its doc says it: "If zero, 150ms." "If empty,
// "not-found"." "If zero, 0.1; negative: none." "If nil, common tracking parameters (...)."
var ifZero = regexp.MustCompile(`If (?:zero|empty|nil), (.+?)(?:;|\.(?:\s|$))`)

// TestOptionsDocsMatchDefaults: the default each Options field's doc gives ("If zero,
// 150ms") is the embedded default (defaults.yaml) of the config key the field sets: the
// zero Options serve as the edge binary does with no config file. A field that sets a key
// and gives no default must either default to the key's zero value or name the key where it
// says why it differs (EarlyHints).
func TestOptionsDocsMatchDefaults(t *testing.T) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "options.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{} // field → its doc, on one line
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.TypeSpec)
		if !ok || spec.Name.Name != "Options" {
			return true
		}
		for _, f := range spec.Type.(*ast.StructType).Fields.List {
			for _, name := range f.Names {
				docs[name.Name] = strings.Join(strings.Fields(f.Doc.Text()), " ")
			}
		}
		return false
	})
	if len(docs) == 0 {
		t.Fatal("no Options struct in options.go")
	}
	defaults, err := config.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	values := configKeys(defaults)
	for key, field := range optionKeys {
		doc, ok := docs[field]
		if !ok {
			t.Errorf("optionKeys[%q]: no field Options.%s in options.go", key, field)
			continue
		}
		def := values[key]
		m := ifZero.FindStringSubmatch(doc)
		if m == nil {
			if !reflect.ValueOf(def).IsZero() && !strings.Contains(doc, key) {
				t.Errorf("Options.%s gives no default (\"If zero, ...\"), but %s defaults to %v in defaults.yaml", field, key, def)
			}
			continue
		}
		if err := sameDefault(m[1], def); err != "" {
			t.Errorf("Options.%s says %q, but %s defaults to %v in defaults.yaml: %s", field, m[0], key, def, err)
		}
	}
}

// sameDefault says how said, a doc's default, differs from def, the key's default; "" when
// it does not. Durations and numbers are compared as values, strings quoted; a list's doc
// names some of its items in parentheses. A doc that says in words what the zero value
// means ("If empty, each replica has only its own cache") matches a zero default only.
func sameDefault(said string, def any) string {
	words := reflect.ValueOf(def).IsZero()
	switch def := def.(type) {
	case string:
		s, err := strconv.Unquote(said)
		switch {
		case err != nil && !words:
			return "the doc's default is not a quoted string"
		case err == nil && s != def:
			return "the strings differ"
		}
	case time.Duration:
		d, err := time.ParseDuration(said)
		switch {
		case err != nil && !words:
			return "the doc's default is not a duration"
		case err == nil && d != def:
			return "the durations differ"
		}
	case int:
		n, err := strconv.Atoi(said)
		switch {
		case err != nil && !words:
			return "the doc's default is not an integer"
		case err == nil && n != def:
			return "the numbers differ"
		}
	case float64:
		f, err := strconv.ParseFloat(said, 64)
		switch {
		case err != nil && !words:
			return "the doc's default is not a number"
		case err == nil && f != def:
			return "the numbers differ"
		}
	case []string:
		list := regexp.MustCompile(`\(([^)]*)\)`).FindStringSubmatch(said)
		if list == nil {
			if words {
				return ""
			}
			return "the doc names none of the list's items, in parentheses"
		}
		for item := range strings.SplitSeq(list[1], ",") {
			if item = strings.TrimSuffix(strings.TrimSpace(item), "..."); !slices.Contains(def, item) {
				return "the list has no " + strconv.Quote(item)
			}
		}
	default:
		return "no comparison for a " + reflect.TypeOf(def).String()
	}
	return ""
}

// TestOptionsErrorsNameTheField: every rule of the edge's configuration holds for Options
// too, and its error names the Options field, not the config key.
func TestOptionsErrorsNameTheField(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    Options
		want []string
	}{
		{"page size", Options{MaxPageMB: -1}, []string{"ssr: Options.MaxPageMB must be at least 1, got -1"}},
		{"hit-for-miss lifetime", Options{CachePassTTL: -time.Second}, []string{"ssr: Options.CachePassTTL must be positive, got -1s"}},
		{"404 freshness", Options{CacheNotFoundTTL: -time.Second}, []string{"ssr: Options.CacheNotFoundTTL must not be negative, got -1s"}},
		{"soft above hard", Options{RenderTimeout: 3 * time.Second}, []string{"ssr: Options.RenderTimeout 3s is above Options.HardTimeout 2s"}},
		{"entry above cache", Options{CacheMaxMB: 4}, []string{"ssr: Options.CacheMaxEntryMB must be between 1 and Options.CacheMaxMB (4), got 8"}},
		{"jitter", Options{CacheTTLJitter: 1}, []string{"ssr: Options.CacheTTLJitter must be in [0, 1), got 1"}},
		{"short key", Options{SharedCacheKey: []byte("short")}, []string{"ssr: Options.SharedCacheKey must be at least 32 bytes, got 5"}},
		{"renders in flight", Options{MaxRendersInFlight: -2}, []string{"ssr: Options.MaxRendersInFlight must be at least 1, got -2"}},
		{"two at once", Options{MaxPropsMB: -1, SharedCacheTimeout: -time.Millisecond}, []string{
			"ssr: Options.MaxPropsMB must be at least 1, got -1", "ssr: Options.SharedCacheTimeout must be positive, got -1ms",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.o)
			if err == nil {
				t.Fatalf("got no error, want %q", tt.want)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("got error %q, want one containing %q", err, want)
				}
			}
			if msg := err.Error(); strings.Contains(msg, "config:") || strings.Contains(msg, "edge.") {
				t.Errorf("got error %q, which names the config file's keys", msg)
			}
		})
	}
}

// TestNegativeJitterIsNone: a negative CacheTTLJitter means no jitter, zero the default.
func TestNegativeJitterIsNone(t *testing.T) {
	for _, tt := range []struct {
		jitter, want float64
	}{{0, 0.1}, {-1, 0}, {0.5, 0.5}} {
		cfg, err := Options{CacheTTLJitter: tt.jitter}.config()
		if err != nil {
			t.Fatal(err)
		}
		if err := config.Validate(cfg); err != nil || cfg.Edge.CacheTTLJitter != tt.want {
			t.Errorf("CacheTTLJitter %v: got edge.cache_ttl_jitter %v (%v), want %v", tt.jitter, cfg.Edge.CacheTTLJitter, err, tt.want)
		}
	}
}
