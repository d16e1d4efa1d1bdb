package ssr

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/netip"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ifZero is a field's default, as its doc says it: "If zero, 150ms." "If empty,
// "not-found"." "If zero, 0.1; negative: none." "If nil, common tracking parameters (...)."
var ifZero = regexp.MustCompile(`If (?:zero|empty|nil), (.+?)(?:;|\.(?:\s|$))`)

// fieldDocs are the docs of the fields of the named structs in file, on one line each, by
// "Struct.Field".
func fieldDocs(t *testing.T, file string, structs ...string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.TypeSpec)
		if !ok || !slices.Contains(structs, spec.Name.Name) {
			return true
		}
		for _, field := range spec.Type.(*ast.StructType).Fields.List {
			for _, name := range field.Names {
				docs[spec.Name.Name+"."+name.Name] = strings.Join(strings.Fields(field.Doc.Text()), " ")
			}
		}
		return false
	})
	return docs
}

// TestOptionsDocsMatchDefaults: the default each field's doc gives ("If zero, 150ms") is
// the one the code applies to zero Options (withDefaults) and ServeOptions (ListenAndServe).
func TestOptionsDocsMatchDefaults(t *testing.T) {
	o := Options{}.withDefaults()
	defaults := map[string]any{}
	for name, v := range map[string]reflect.Value{
		"Options": reflect.ValueOf(o), "Timeouts": reflect.ValueOf(o.Timeouts),
	} {
		for i := range v.NumField() {
			defaults[name+"."+v.Type().Field(i).Name] = v.Field(i).Interface()
		}
	}
	defaults["ServeOptions.AdminAddr"] = defaultAdminAddr
	defaults["ServeOptions.MaxConnections"] = defaultMaxConnections
	defaults["ServeOptions.MaxConnectionsPerClient"] = 0 // said in words: a quarter of MaxConnections, 256 of the default 1024 (TestDefaultsAreTheBinarys)
	defaults["ServeOptions.ShutdownTimeout"] = defaultShutdownTimeout
	defaults["ServeOptions.TrustedProxies"] = []netip.Prefix(nil)
	defaults["ServeOptions.ShutdownDelay"] = time.Duration(0)
	docs := fieldDocs(t, "options.go", "Options", "Timeouts")
	for field, doc := range fieldDocs(t, "serve.go", "ServeOptions") {
		docs[field] = doc
	}
	said := 0
	for field, doc := range docs {
		m := ifZero.FindStringSubmatch(doc)
		if m == nil {
			continue
		}
		said++
		def, ok := defaults[field]
		if !ok {
			t.Errorf("%s says %q, but the test knows no default for it", field, m[0])
			continue
		}
		if v := reflect.ValueOf(def); !v.IsValid() || v.Kind() == reflect.Func || v.Kind() == reflect.Pointer {
			continue // "If nil, no spans": a behaviour, said in words
		}
		if err := sameDefault(m[1], def); err != "" {
			t.Errorf("%s says %q, but its default is %v: %s", field, m[0], def, err)
		}
	}
	if said < 20 {
		t.Errorf("only %d fields say their default: is the pattern still right?", said)
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
		if mib, ok := strings.CutSuffix(said, " MiB"); ok {
			n, err = strconv.Atoi(mib)
			n <<= 20
		}
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
	case []netip.Prefix: // only ever "If nil, none"
		if !words {
			return "a list of prefixes by default: say it in the doc"
		}
	default:
		return "no comparison for a " + reflect.TypeOf(def).String()
	}
	return ""
}

// TestOptionsErrorsNameTheField: every broken rule is an *OptionError naming its field.
func TestOptionsErrorsNameTheField(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    Options
		want []string
	}{
		{"page size", Options{MaxPageBytes: -1}, []string{"ssr: Options.MaxPageBytes must not be negative, got -1"}},
		{"cache size", Options{CacheMaxBytes: -1}, []string{"ssr: Options.CacheMaxBytes must not be negative, got -1"}},
		{"render above hard", Options{Timeouts: Timeouts{Render: 3 * time.Second}}, []string{"ssr: Options.Timeouts.Render 3s is above Options.Timeouts.Hard 2s"}},
		{"short key", Options{SharedCacheKey: []byte("short")}, []string{"ssr: Options.SharedCacheKey must be at least 32 bytes, got 5"}},
		{"renders in flight", Options{RenderSlots: -2}, []string{"ssr: Options.RenderSlots must not be negative, got -2"}},
		{"two at once", Options{MaxPageBytes: -1, Timeouts: Timeouts{Stream: -time.Millisecond}}, []string{
			"ssr: Options.MaxPageBytes must not be negative, got -1", "ssr: Options.Timeouts.Stream must not be negative, got -1ms",
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
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				if _, ok := e.(*OptionError); !ok {
					t.Errorf("got %T %q in the error, want an *OptionError", e, e)
				}
			}
		})
	}
}

// TestPageErrorsNameTheField: Page's rules, through PageOptions.Validate, name PageOptions' fields,
// the Server's deadlines taken where the page sets none.
func TestPageErrorsNameTheField(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    PageOptions
		want string
	}{
		{"variant", PageOptions{Variants: []string{"header:X", "Accept"}}, `ssr: PageOptions.Variants[1] want "header:Name" or "cookie:name", got "Accept"`},
		{"render above the server's hard", PageOptions{Timeouts: Timeouts{Render: 3 * time.Second}}, "ssr: PageOptions.Timeouts.Render 3s is above the page's hard timeout (PageOptions.Timeouts.Hard) 2s"},
		{"stream outside", PageOptions{Stream: true, Timeouts: Timeouts{Stream: 5 * time.Second}}, "ssr: PageOptions.Timeouts.Stream 5s must lie between"},
		{"cached without query", PageOptions{Cache: CachePolicy{TTL: time.Minute}}, "ssr: PageOptions.Cache.Query must list"},
		{"negative window", PageOptions{Cache: CachePolicy{StaleIfError: -time.Second, Query: []string{}}}, "ssr: PageOptions.Cache.StaleIfError must not be negative"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.p.Validate(Options{}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if err := (PageOptions{Stream: true, Timeouts: Timeouts{Render: 3 * time.Second, Hard: 5 * time.Second}}).Validate(Options{}); err != nil {
		t.Errorf("a page whose deadlines move the Server's stream timeout within them: got %v", err)
	}
}
