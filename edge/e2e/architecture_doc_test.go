package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/e2e/harness"
)

// TestArchitectureNamesWhatTheCodeNames: docs/architecture.md is the design as built, so each
// file it names in code spans exists, and each name it gives code (`startDeferred`,
// `page.entryFor`, `edge_stream_partial_total`) is one the tree still has: a renamed function
// or a removed field that the doc goes on naming fails here. A name found anywhere in the
// tree passes, so the check catches names that are gone, not names moved to another type.
func TestArchitectureNamesWhatTheCodeNames(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(harness.RepoRoot, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	all, code := sources(t)
	words := regexp.MustCompile(`[A-Za-z_$][\w$]*`)
	anywhere, inCode := map[string]bool{}, map[string]bool{}
	for _, w := range words.FindAllString(all, -1) {
		anywhere[w] = true
	}
	for _, w := range words.FindAllString(code, -1) {
		inCode[w] = true
	}
	spans := regexp.MustCompile("`([^`\n]+)`").FindAllStringSubmatch(string(doc), -1)
	path := regexp.MustCompile(`^[\w.\-/]+$`)
	ident := regexp.MustCompile(`^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*(\(\))?$`)
	checked := map[string]bool{}
	for _, m := range spans {
		span := m[1]
		if checked[span] {
			continue
		}
		checked[span] = true
		switch {
		case strings.Contains(span, "/") && path.MatchString(span):
			if !strings.HasPrefix(span, "/") && !exists(span) { // one starting with / is a URL's path
				t.Errorf("docs/architecture.md names %s, which is not a file or folder of the tree", span)
			}
		case ident.MatchString(span):
			name := span[strings.LastIndex(strings.TrimSuffix(span, "()"), ".")+1:]
			name = strings.TrimSuffix(name, "()")
			if len(name) < 4 || platform[name] {
				continue
			}
			if strings.ContainsAny(name, "_") || strings.ToUpper(name[:1]) == name[:1] {
				// Config keys, metrics, proto fields, types, tests: as written anywhere.
				if !anywhere[name] {
					t.Errorf("docs/architecture.md names `%s`, which no file of the tree has", span)
				}
				continue
			}
			// A function, method, field or variable: on a line of code, not only in a comment.
			if !inCode[name] {
				t.Errorf("docs/architecture.md names `%s`, which no code of the tree has", span)
			}
		}
	}
}

// platform are names of Node's, Go's or React's the doc mentions, not the tree's.
var platform = map[string]bool{"setInterval": true}

// exists reports whether a path the doc names is a file or folder of the tree: from its root,
// or from the folder the doc's section is about.
func exists(p string) bool {
	for _, dir := range []string{"", "edge", "edge/internal", "edge/internal/server", "renderer", "renderer/src"} {
		if _, err := os.Stat(filepath.Join(harness.RepoRoot, dir, p)); err == nil {
			return true
		}
	}
	return false
}

// sources are the tree's source files joined: all of them, and their lines that are not
// comments.
func sources(t *testing.T) (all, code string) {
	t.Helper()
	var a, c strings.Builder
	for _, dir := range []string{"edge", "renderer/src", "renderer/bin", "renderer/build", "renderer/client", "renderer/test", "proto", "app/src", "shop", "deploy", "scripts", "bench", "loadtest"} {
		err := filepath.WalkDir(filepath.Join(harness.RepoRoot, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "dist" || d.Name() == "results") {
				return filepath.SkipDir
			}
			switch filepath.Ext(p) {
			case ".go", ".js", ".mjs", ".jsx", ".proto", ".yaml", ".yml", ".json", ".sh":
			default:
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			a.Write(b)
			a.WriteByte('\n')
			for line := range strings.Lines(string(b)) {
				if trimmed := strings.TrimSpace(line); !strings.HasPrefix(trimmed, "//") && !strings.HasPrefix(trimmed, "*") &&
					!strings.HasPrefix(trimmed, "/*") && !strings.HasPrefix(trimmed, "#") {
					c.WriteString(line)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return a.String(), c.String()
}
