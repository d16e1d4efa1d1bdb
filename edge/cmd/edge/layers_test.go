package main

import (
	"os/exec"
	"strings"
	"testing"
)

// floors are the edge module's packages from the door down: the binary, its config file
// decoded into the public package's options, the public package, the page's request path
// with its render flight, the rooms it calls, and the leaves. Tests' helpers (poll,
// logtest, redistest, rendertest, e2e) are outside the line.
var floors = [][]string{
	{"cmd/edge", "cmd/ssr-types"},
	{"internal/config"},
	{"ssr"},
	{"internal/server"},
	{"internal/admin", "internal/middleware", "internal/flights", "internal/renderclient", "internal/sharedcache", "internal/propstypes"},
	{"internal/circuit", "internal/clock", "internal/conns", "internal/document", "internal/htmlcache", "internal/tracing", "internal/proto/ssr/v1"},
}

// TestImportsRunOneWay: every package of the module imports only packages on floors below
// its own: the edge binary enters through the public package like any Go shop, and no room
// reaches back up to the one that calls it (go list's import graph, as built).
func TestImportsRunOneWay(t *testing.T) {
	const module = "github.com/sidecar-ssr/sidecar-ssr/edge/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	floorOf := map[string]int{}
	for i, pkgs := range floors {
		for _, p := range pkgs {
			floorOf[p] = i
		}
	}
	outside := func(p string) bool {
		return strings.HasPrefix(p, "e2e") || p == "internal/poll" || p == "internal/logtest" || strings.HasSuffix(p, "/redistest") || strings.HasSuffix(p, "/rendertest")
	}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		if outside(pkg) {
			continue
		}
		from, ok := floorOf[pkg]
		if !ok {
			t.Errorf("%s is on no floor: give it one in floors", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			if to, ok := floorOf[dep]; !ok || to <= from {
				t.Errorf("%s (floor %d) imports %s (floor %d): imports run down the floors only", pkg, from, dep, to)
			}
		}
	}
}
