package server

// The island marker: what the template function `island` leaves in an executed template where
// an island goes (its name and props in a comment no page text can forge), and how Wrap's
// island writer finds them again.

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"html/template"
	"regexp"
)

// islandMark starts the comment the template function leaves where an island goes. Its
// random part is this process's: no text a template writes can be taken for one (and
// html/template escapes a page's text anyway).
var islandMark = []byte("<!--ssr-island:" + rand.Text() + ":")

var islandName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// IsIslandName reports whether name may name an island: 1 to 128 letters, digits, '_' and '-'.
func IsIslandName(name string) bool { return islandName.MatchString(name) }

// IslandMarker is the template function `island`: {{ island "Cart" .Cart }} marks where
// the island Cart goes, with its props (marshalled to JSON, which must be an object; a
// json.RawMessage passes as it is; nil is {}). Written through Wrap, it is rendered there.
// Use it where the template writes element content: elsewhere html/template escapes the
// marker.
func IslandMarker(name string, props any) (template.HTML, error) {
	if !IsIslandName(name) {
		return "", fmt.Errorf("island %q: a name is 1 to 128 letters, digits, '_' and '-'", name)
	}
	var b []byte
	switch v := props.(type) {
	case nil:
		b = []byte("{}")
	case json.RawMessage:
		if !json.Valid(v) {
			return "", fmt.Errorf("island %q: its props are not JSON", name)
		}
		b = bytes.TrimLeft(v, " \t\r\n")
	default:
		var err error
		if b, err = json.Marshal(props); err != nil {
			return "", fmt.Errorf("island %q: its props: %w", name, err)
		}
	}
	if b[0] != '{' {
		return "", fmt.Errorf("island %q: its props must be a JSON object", name)
	}
	// Escaped, the JSON holds no '>': the comment ends where the marker does.
	var m bytes.Buffer
	m.Write(islandMark)
	m.WriteString(name)
	m.WriteByte(':')
	json.HTMLEscape(&m, b)
	m.WriteString("-->")
	return template.HTML(m.String()), nil
}

// markedIsland is one marker in an executed template: at page[start:end].
type markedIsland struct {
	start, end int
	name       string
	props      []byte
}

// findIslands returns the markers in page, in order.
func findIslands(page []byte) []markedIsland {
	var found []markedIsland
	for at := 0; ; {
		i := bytes.Index(page[at:], islandMark)
		if i < 0 {
			return found
		}
		start := at + i
		rest := page[start+len(islandMark):]
		colon := bytes.IndexByte(rest, ':')
		end := bytes.Index(rest, []byte("-->"))
		if colon < 0 || end < colon {
			return found // cut off: not a marker IslandMarker wrote
		}
		found = append(found, markedIsland{
			start: start, end: start + len(islandMark) + end + len("-->"),
			name: string(rest[:colon]), props: rest[colon+1 : end],
		})
		at = found[len(found)-1].end
	}
}
