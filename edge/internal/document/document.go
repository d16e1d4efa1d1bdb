// Package document writes the HTML document around a rendered page: the edge owns the shell
// (doctype, head, asset tags, hydration data, root element), the renderer only the page.
package document

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
)

// Manifest is the client build's manifest.json (docs/app-contract.md).
type Manifest struct {
	BuildID string   `json:"buildId"`
	Scripts []string `json:"scripts"`
	Styles  []string `json:"styles"`
}

// LoadManifest reads <assetsDir>/manifest.json.
func LoadManifest(assetsDir string) (*Manifest, error) {
	path := filepath.Join(assetsDir, "manifest.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("client build manifest: %w (build the app first: make build)", err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("client build manifest %s: %w", path, err)
	}
	if len(m.Scripts) == 0 {
		return nil, errors.New("client build manifest " + path + ": no scripts")
	}
	return &m, nil
}

// Shell assembles documents for one client build. It is safe for concurrent use.
type Shell struct {
	top    string // doctype through the viewport meta: precedes the page's head tags
	assets string // stylesheet and script tags, then the end of head and the root's opening
}

// NewShell prepares the parts of the document that do not change between pages.
func NewShell(m *Manifest) *Shell {
	var assets strings.Builder
	for _, href := range m.Styles {
		fmt.Fprintf(&assets, "<link rel=\"stylesheet\" href=\"%s\">\n", html.EscapeString(href))
	}
	for _, src := range m.Scripts {
		fmt.Fprintf(&assets, "<script type=\"module\" src=\"%s\"></script>\n", html.EscapeString(src))
	}
	assets.WriteString("</head>\n<body>\n<div id=\"root\">")
	return &Shell{
		top: "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n" +
			"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
		assets: assets.String(),
	}
}

// Page is what goes into one document.
type Page struct {
	Name   string
	URL    string
	Params map[string]string
	// Head is trusted markup from the app's head(); HTML the rendered root.
	Head string
	HTML []byte
	// PropsJSON is the JSON object the page rendered with. Nil means client-side rendering:
	// the root stays empty and the client entry loads its own data.
	PropsJSON []byte
}

// dataPrefix is the serialized hydration envelope without its props.
type dataPrefix struct {
	Page   string            `json:"page"`
	URL    string            `json:"url"`
	Params map[string]string `json:"params"`
}

const dataOpen = "</div>\n<script id=\"__SSR_DATA__\" type=\"application/json\">"
const closing = "</script>\n</body>\n</html>\n"

// Append appends the document for p to dst and returns the extended slice.
//
// Everything inside the data script is JSON with <, >, & and U+2028/U+2029 escaped as \uXXXX,
// so no value can end the script element (</script>), open a comment (<!--) or break a
// JavaScript parser that reads the JSON as a literal.
func (s *Shell) Append(dst []byte, p Page) []byte {
	dst = append(dst, s.top...)
	if p.Head != "" {
		dst = append(dst, p.Head...)
		dst = append(dst, '\n')
	}
	dst = append(dst, s.assets...)
	dst = append(dst, p.HTML...)
	dst = append(dst, dataOpen...)

	// json.Marshal already escapes <, >, &, U+2028 and U+2029 in strings.
	prefix, err := json.Marshal(dataPrefix{Page: p.Name, URL: p.URL, Params: nonNil(p.Params)})
	if err != nil { // strings and a map of strings always marshal
		panic(err)
	}
	if p.PropsJSON == nil {
		dst = append(dst, prefix...)
	} else {
		dst = append(dst, prefix[:len(prefix)-1]...)
		dst = append(dst, `,"props":`...)
		buf := bytes.NewBuffer(dst)
		json.HTMLEscape(buf, p.PropsJSON)
		dst = append(buf.Bytes(), '}')
	}
	return append(dst, closing...)
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
