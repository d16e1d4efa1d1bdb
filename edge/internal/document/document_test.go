package document

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var dataScript = regexp.MustCompile(`(?s)<script id="__SSR_DATA__" type="application/json">(.*?)</script>`)

func TestAppendEscapesHydrationData(t *testing.T) {
	hostile := "</script><script>alert(1)</script> <!-- \u2028 \u2029 & </SCRIPT >"
	props, _ := json.Marshal(map[string]string{"text": hostile})
	shell := NewShell(&Manifest{Scripts: []string{"/assets/client-1.js"}, Styles: []string{"/assets/client-1.css"}})

	tests := []struct {
		name string
		page Page
	}{
		{"props", Page{Name: "home", URL: "/?q=" + hostile, PropsJSON: props}},
		{"params", Page{Name: "product", URL: "/", Params: map[string]string{"id": hostile}, PropsJSON: []byte(`{}`)}},
		{"client-side render", Page{Name: "x</script>", URL: "/" + hostile}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := string(shell.Append(nil, tt.page))
			m := dataScript.FindStringSubmatch(doc)
			if m == nil {
				t.Fatalf("no data script in %q", doc)
			}
			data := m[1]
			for _, banned := range []string{"<", ">", "&", "\u2028", "\u2029"} {
				if strings.Contains(data, banned) {
					t.Errorf("data script contains %q unescaped: %s", banned, data)
				}
			}
			if got := strings.Count(strings.ToLower(doc), "</script"); got != 2 {
				t.Errorf("got %d </script tags, want 2 (the asset and the data script)", got)
			}
			var envelope struct {
				Page   string            `json:"page"`
				URL    string            `json:"url"`
				Params map[string]string `json:"params"`
				Props  map[string]string `json:"props"`
			}
			if err := json.Unmarshal([]byte(data), &envelope); err != nil {
				t.Fatalf("data script is not JSON: %v\n%s", err, data)
			}
			if envelope.Page != tt.page.Name || envelope.URL != tt.page.URL {
				t.Errorf("got page %q url %q, want %q %q", envelope.Page, envelope.URL, tt.page.Name, tt.page.URL)
			}
			if tt.page.PropsJSON == nil && envelope.Props != nil {
				t.Errorf("client-side render carries props %v", envelope.Props)
			}
			if tt.name == "props" && envelope.Props["text"] != hostile {
				t.Errorf("props did not round-trip: got %q", envelope.Props["text"])
			}
		})
	}
}

func TestAppendLayout(t *testing.T) {
	shell := NewShell(&Manifest{Scripts: []string{"/assets/a.js"}, Styles: []string{"/assets/a.css"}})
	doc := string(shell.Append(nil, Page{Name: "home", URL: "/", Head: "<title>Shop</title>", HTML: []byte("<main>hi</main>"), PropsJSON: []byte(`{"a":1}`)}))
	order := []string{"<!doctype html>", "<head>", "<title>Shop</title>", `href="/assets/a.css"`, `src="/assets/a.js"`, "</head>", `<div id="root"><main>hi</main></div>`, `"props":{"a":1}}`, "</html>"}
	pos := 0
	for _, want := range order {
		i := strings.Index(doc[pos:], want)
		if i < 0 {
			t.Fatalf("missing %q after position %d in:\n%s", want, pos, doc)
		}
		pos += i + len(want)
	}
	csr := string(shell.Append(nil, Page{Name: "home", URL: "/"}))
	if !strings.Contains(csr, `<div id="root"></div>`) || strings.Contains(csr, `"props"`) {
		t.Errorf("client-side-render shell: want empty root and no props, got:\n%s", csr)
	}
}

// AppendAround's document, its parts around the page's HTML, is Append's, for every kind of
// page; one whose HTML carries nonce placeholders comes whole.
func TestAppendAround(t *testing.T) {
	shell := NewShell(&Manifest{Scripts: []string{"/assets/a.js"}, Styles: []string{"/assets/a.css"}})
	for _, p := range []Page{
		{Name: "home", URL: "/", Head: "<title>Shop</title>", HTML: []byte("<main>hi</main>"), PropsJSON: []byte(`{"a":"</script>"}`), Nonce: "n1"},
		{Name: "csr", URL: "/x"},
		{Name: "deferred", URL: "/d", HTML: []byte("<p>d</p>"), Deferred: []Deferred{{Name: "r", JSON: []byte(`[1]`)}}},
		{Name: "streamed", URL: "/s", HTML: []byte(`<script nonce="PH">1</script>`), NoncePlaceholder: "PH", Nonce: "n2"},
	} {
		whole := string(shell.Append(nil, p))
		doc, at := shell.AppendAround([]byte("junk"), p)
		doc = doc[len("junk"):]
		got := string(doc)
		if at >= 0 {
			got = string(doc[:at]) + string(p.HTML) + string(doc[at:])
		}
		if got != whole {
			t.Errorf("%s: around its HTML at %d:\n%s\nwant:\n%s", p.Name, at, got, whole)
		}
		if (at < 0) != (p.NoncePlaceholder != "") {
			t.Errorf("%s: at = %d; only a page with nonce placeholders comes whole", p.Name, at)
		}
	}
}

// A streamed body's inline scripts carry the renderer's placeholder: each document, live,
// stored or served from the store, has the response's nonce there and nowhere else.
func TestNoncePlaceholder(t *testing.T) {
	shell := NewShell(&Manifest{Scripts: []string{"/assets/a.js"}})
	const ph = "PH"
	body := []byte(`<p nonce="PH">text</p><script nonce="PH">$RC("B:0","S:0")</script><script nonce="PH">$RC("B:1","S:1")</script>`)
	page := Page{Name: "p", URL: "/", HTML: body, PropsJSON: []byte(`{}`), NoncePlaceholder: ph}
	scripts := regexp.MustCompile(`<script\b[^>]*>`)
	check := func(t *testing.T, doc, nonce string) {
		t.Helper()
		if strings.Contains(doc, ph) {
			t.Errorf("the placeholder is left in:\n%s", doc)
		}
		tags := scripts.FindAllString(doc, -1)
		if len(tags) != 4 {
			t.Fatalf("got %d script elements, want 4:\n%s", len(tags), doc)
		}
		for _, tag := range tags {
			if got := strings.Contains(tag, ` nonce="`+nonce+`"`); got != (nonce != "") {
				t.Errorf("got %s, want nonce %q", tag, nonce)
			}
		}
	}
	for _, tt := range []struct{ name, nonce string }{{"with a nonce", "n1"}, {"without", ""}} {
		t.Run(tt.name, func(t *testing.T) {
			p := page
			p.Nonce = tt.nonce
			live := shell.Append(nil, p)
			check(t, string(live), tt.nonce)
			template, slots := shell.AppendTemplate(nil, p)
			check(t, string(template), "")
			if got := WithNonce(nil, template, slots, tt.nonce); string(got) != string(live) {
				t.Errorf("the stored document with its nonce differs from the live one:\n%s\n%s", got, live)
			}
			if got := NoncedLen(template, slots, tt.nonce); got != len(live) {
				t.Errorf("NoncedLen: got %d, want %d", got, len(live))
			}
			// A prelude stored up to its end, and the end written for each response.
			open, openSlots := shell.AppendOpenTemplate(nil, p)
			if got := string(WithNonce(nil, open, openSlots, tt.nonce)) + string(AppendClose(nil, p)); got != string(live) {
				t.Errorf("the stored opening and the end differ from the live document:\n%s\n%s", got, live)
			}
			if got, want := string(AppendNonced(nil, body, ph, tt.nonce)), strings.ReplaceAll(string(body), ` nonce="PH"`, nonceOrNot(tt.nonce)); got != want {
				t.Errorf("AppendNonced: got %s, want %s", got, want)
			}
		})
	}
}

func nonceOrNot(nonce string) string {
	if nonce == "" {
		return ""
	}
	return ` nonce="` + nonce + `"`
}

func TestLoadManifest(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadManifest(dir); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Errorf("missing manifest: got %v, want an error that says to build", err)
	}
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"buildId":"b1","scripts":["/assets/c.js"],"styles":[]}`), 0o644)
	m, err := LoadManifest(dir)
	if err != nil || m.BuildID != "b1" || m.Scripts[0] != "/assets/c.js" {
		t.Errorf("got %+v, %v", m, err)
	}
}

// TestShellFollowsItsManifest: a new client build written over the manifest (make dev) is
// linked by the documents assembled after it; a manifest that does not parse leaves the
// last good build.
func TestShellFollowsItsManifest(t *testing.T) {
	dir := t.TempDir()
	write := func(manifest string) {
		tmp := filepath.Join(dir, "manifest.json.tmp")
		if err := os.WriteFile(tmp, []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "manifest.json")); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"buildId":"b1","scripts":["/assets/one.js"],"styles":["/assets/one.css"]}`)
	m, err := LoadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	shell := NewShell(m)
	assets := func() string {
		_, head, _ := strings.Cut(string(shell.Append(nil, Page{Name: "home", URL: "/"})), "initial-scale=1\">\n")
		tags, _, _ := strings.Cut(head, "</head>")
		return tags
	}
	one := `<link rel="stylesheet" href="/assets/one.css">` + "\n" + `<script type="module" src="/assets/one.js"></script>` + "\n"
	two := `<script type="module" src="/assets/two.js"></script>` + "\n"
	if got := assets(); got != one {
		t.Fatalf("got %q, want %q", got, one)
	}

	write(`{"buildId":"b2","scripts":["/assets/two.js"],"styles":[]}`)
	deadline := time.Now().Add(10 * manifestCheckInterval)
	for got := assets(); got != two; got = assets() {
		if got != one {
			t.Fatalf("got %q while the build changed, want the first or the second", got)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the documents still link the first build %s after it was replaced", 10*manifestCheckInterval)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The HTML cache keys on the build id: pages of the first build are not served for the
	// second. The 103's Link header names the new files.
	if shell.BuildID() != "b2" || shell.Preload() != "</assets/two.js>; rel=modulepreload" {
		t.Errorf("after the new build: BuildID %q, Preload %q", shell.BuildID(), shell.Preload())
	}

	for _, broken := range []string{`{"buildId":"b3","scripts":[`, `{"buildId":"b3","scripts":[]}`} {
		write(broken)
		shell.rereadManifest()
		if got := assets(); got != two {
			t.Errorf("after the manifest became %s: got %q, want the last good build, %q", broken, got, two)
		}
	}
}

// TestShellLinksTheBuildAPageNames: a page links the client build its server bundle was
// built with: the one before the manifest's current build (a renderer not reloaded yet),
// or one the manifest names but the Shell has not read yet (a renderer reloaded first);
// a build no manifest has named, or whose files are gone, links the current one, and Links
// says so.
func TestShellLinksTheBuildAPageNames(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "assets"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(id string) {
		if err := os.WriteFile(filepath.Join(dir, "assets", id+".js"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		manifest := `{"buildId":"` + id + `","scripts":["/assets/` + id + `.js"],"styles":[]}`
		if err := os.WriteFile(filepath.Join(dir, "manifest.json.tmp"), []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "manifest.json.tmp"), filepath.Join(dir, "manifest.json")); err != nil {
			t.Fatal(err)
		}
	}
	write("b1")
	m, err := LoadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	shell := NewShell(m)
	write("b2")
	shell.rereadManifest()
	links := func(clientBuild string) string {
		doc := string(shell.Append(nil, Page{Name: "home", URL: "/", ClientBuild: clientBuild}))
		if strings.Count(doc, `<script type="module"`) != 1 {
			t.Fatalf("not one client script:\n%s", doc)
		}
		_, src, _ := strings.Cut(doc, `<script type="module" src="/assets/`)
		return strings.TrimSuffix(src[:strings.Index(src, `"`)], ".js")
	}
	write("b3") // not read yet: no check is due
	for _, c := range []struct{ page, links string }{{"b2", "b2"}, {"b1", "b1"}, {"b3", "b3"}, {"b9", "b3"}} {
		if got := links(c.page); got != c.links {
			t.Errorf("a page naming build %q links %s, want %s", c.page, got, c.links)
		}
	}
	if !shell.Links("b1") || shell.Links("b9") {
		t.Errorf("Links(b1) %v, Links(b9) %v: want true, false", shell.Links("b1"), shell.Links("b9"))
	}
	if got := string(shell.AppendAssets(nil, "", "b1")); !strings.Contains(got, "/assets/b1.js") {
		t.Errorf("AppendAssets for b1: %s", got)
	}
	// A rebuild that removed an older build's files: its pages link the current build.
	write("b4")
	shell.rereadManifest()
	write("b5")
	shell.rereadManifest()
	if err := os.Remove(filepath.Join(dir, "assets", "b4.js")); err != nil {
		t.Fatal(err)
	}
	if got := links("b4"); got != "b5" || shell.Links("b4") {
		t.Errorf("a page naming b4, whose files are gone, links %s (Links %v), want b5", got, shell.Links("b4"))
	}
}

func BenchmarkAppend(b *testing.B) {
	shell := NewShell(&Manifest{Scripts: []string{"/assets/a.js"}})
	html := []byte(strings.Repeat("<div class=\"card\">product</div>", 7000))
	props := []byte(`{"items":[` + strings.Repeat(`{"name":"Lamp <b>","price":1999},`, 1500) + `{}]}`)
	buf := make([]byte, 0, 512<<10)
	b.ReportAllocs()
	for b.Loop() {
		buf = shell.Append(buf[:0], Page{Name: "home", URL: "/", HTML: html, PropsJSON: props})
	}
}

var escapeCases = []struct{ in, want string }{
	{"", ""},
	{`{"a":1}`, `{"a":1}`},
	{"<>&", `\u003c\u003e\u0026`},
	{`{"html":"</script><!--x-->","q":"a&b"}`, `{"html":"\u003c/script\u003e\u003c!--x--\u003e","q":"a\u0026b"}`},
	{"\u2028\u2029", `\u2028\u2029`},
	{"x\u2028", `x\u2028`},
	{"0123456\u2028", `0123456\u2028`}, // straddles the first 8-byte word
	{"01234567<", `01234567\u003c`},    // first byte of the second word
	{"0123456789abcdef0123456>tail", `0123456789abcdef0123456\u003etail`},
	{"€ “quoted” — …", "€ “quoted” — …"}, // other E2 sequences stay as they are
	{"\xe2\x80\xa7 \xe2\x80\xaa", "\xe2\x80\xa7 \xe2\x80\xaa"},
	{"\xe2\x80", "\xe2\x80"}, // truncated U+2028
	{"\xe2", "\xe2"},
	{"\xe2<", "\xe2\\u003c"},
	{"\xe2\xe2\x80\xa9", "\xe2\\u2029"},
	{"Café & Größe <b>", `Café \u0026 Größe \u003cb\u003e`},
}

func TestAppendHTMLEscape(t *testing.T) {
	for _, tt := range escapeCases {
		if got := string(appendHTMLEscape([]byte("pre"), []byte(tt.in))); got != "pre"+tt.want {
			t.Errorf("appendHTMLEscape(%q) = %q, want %q", tt.in, got[3:], tt.want)
		}
		var want bytes.Buffer
		json.HTMLEscape(&want, []byte(tt.in))
		if want.String() != tt.want {
			t.Errorf("json.HTMLEscape(%q) = %q: the table is wrong", tt.in, want.String())
		}
	}
}

func FuzzAppendHTMLEscape(f *testing.F) {
	for _, tt := range escapeCases {
		f.Add([]byte(tt.in))
	}
	f.Add(realisticProps()[:512])
	f.Fuzz(func(t *testing.T, src []byte) {
		var want bytes.Buffer
		want.WriteString("pre")
		json.HTMLEscape(&want, src)
		if got := appendHTMLEscape([]byte("pre"), src); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("appendHTMLEscape(%q)\n got %q\nwant %q", src, got, want.Bytes())
		}
	})
}

// realisticProps is ~38 KB of props as a renderer sends them: JSON.stringify leaves <, > and &
// as they are, and shop copy has some non-ASCII text.
func realisticProps() []byte {
	words := strings.Fields("lamp oak table chair Café naïve design light warm Größe modern steel - classic soft linen")
	type item struct {
		ID          int      `json:"id"`
		Name        string   `json:"name"`
		Description string   `json:"description"`
		URL         string   `json:"url"`
		Price       string   `json:"price"`
		Tags        []string `json:"tags"`
		InStock     bool     `json:"inStock"`
	}
	items := make([]item, 130)
	for i := range items {
		var d strings.Builder
		if i%4 == 0 {
			d.WriteString("“classic” — ")
		}
		for j := range 22 {
			d.WriteString(words[(i*7+j*3)%len(words)] + " ")
		}
		if i%3 == 0 {
			d.WriteString("Tom & Jerry ")
		}
		if i%5 == 0 {
			d.WriteString("<b>sale</b>")
		}
		items[i] = item{ID: i, Name: fmt.Sprintf("%s %s %d", words[i%len(words)], words[(i+5)%len(words)], i),
			Description: d.String(), URL: fmt.Sprintf("/products/%d?color=red&size=m", i),
			Price: fmt.Sprintf("%d,99 €", 10+i), Tags: []string{"home", words[i%len(words)]}, InStock: i%2 == 0}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{"title": "Shop", "items": items}); err != nil {
		panic(err)
	}
	return bytes.TrimSpace(b.Bytes())
}

func BenchmarkHTMLEscape(b *testing.B) {
	props := realisticProps()
	buf := make([]byte, 0, 2*len(props))
	b.Run("json.HTMLEscape", func(b *testing.B) {
		b.SetBytes(int64(len(props)))
		b.ReportAllocs()
		for b.Loop() {
			w := bytes.NewBuffer(buf[:0])
			json.HTMLEscape(w, props)
		}
	})
	b.Run("appendHTMLEscape", func(b *testing.B) {
		b.SetBytes(int64(len(props)))
		b.ReportAllocs()
		for b.Loop() {
			appendHTMLEscape(buf[:0], props)
		}
	})
}
