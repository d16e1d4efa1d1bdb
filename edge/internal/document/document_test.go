package document

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
