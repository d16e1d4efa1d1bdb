// Package propstypes turns the Go types of pages' props (ssr.Typed) and deferred values
// (ssr.Defer) into the app's TypeScript declarations, and the props' into a JSON Schema,
// following encoding/json's rules, so that the React pages are checked against what the Go
// loaders really send.
package propstypes

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

const ssrPackage = "github.com/sidecar-ssr/sidecar-ssr/edge/ssr"

// A Page is a page registered with ssr.Typed: Page(Name, PageOptions{Load: Typed(...)}); or,
// Island set, an island declared with ssr.TypedIsland[Props](server, Name, ...).
type Page struct {
	Name   string
	Island bool
	Props  types.Type
	// Deferred are the values its loader defers, by name.
	Deferred []Deferred
	At       token.Position
}

// A Deferred is a deferred value a typed loader names in a map[string]ssr.Deferred literal.
type Deferred struct {
	Name string
	// Type is T of ssr.Defer[T]; any for a value given some other way, which is all a plain
	// ssr.Deferred says of it.
	Type types.Type
}

// listed is what go list says of one package.
type listed struct {
	ImportPath      string
	Dir             string
	Export          string
	CompiledGoFiles []string
	ImportMap       map[string]string
	DepOnly         bool
	Error           *struct{ Err string }
}

// Find type-checks the packages matching patterns (as go list in dir resolves them) and
// returns the pages they register with ssr.Typed, by name. Their dependencies come from
// the compiler's export data, so they are built as go build would; the packages
// themselves are checked from source, where the registrations are.
func Find(dir string, patterns ...string) ([]Page, error) {
	fset, pkgs, err := load(dir, patterns)
	if err != nil {
		return nil, err
	}
	found := map[string]Page{}
	for _, p := range pkgs {
		pages, err := registrations(fset, p.files, p.info)
		if err != nil {
			return nil, err
		}
		for _, page := range pages {
			key, what := page.Name, "page"
			if page.Island {
				key, what = "island:"+page.Name, "island"
			}
			// By name, not types.Identical: a package given both as a pattern and as an
			// import of another is two *types.Package, one from source, one from export data.
			if seen, ok := found[key]; ok && types.TypeString(seen.Props, nil) != types.TypeString(page.Props, nil) {
				return nil, fmt.Errorf("%s: %s %q has props %s here and %s at %s: one %s, one props type",
					page.At, what, page.Name, page.Props, seen.Props, seen.At, what)
			} else if ok && deferredString(seen.Deferred) != deferredString(page.Deferred) {
				return nil, fmt.Errorf("%s: page %q defers %s here and %s at %s: one page, one set of deferred values",
					page.At, page.Name, deferredString(page.Deferred), deferredString(seen.Deferred), seen.At)
			}
			found[key] = page
		}
	}
	pages := make([]Page, 0, len(found))
	for _, page := range found {
		pages = append(pages, page)
	}
	slices.SortFunc(pages, func(a, b Page) int {
		return cmp.Or(cmp.Compare(btoi(a.Island), btoi(b.Island)), strings.Compare(a.Name, b.Name))
	})
	return pages, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checked is a package type-checked from source.
type checked struct {
	pkg   *types.Package
	files []*ast.File
	info  *types.Info
}

func load(dir string, patterns []string) (*token.FileSet, []checked, error) {
	pkgs, err := list(dir, patterns)
	if err != nil {
		return nil, nil, err
	}
	fset := token.NewFileSet()
	exports := map[string]string{}
	for _, p := range pkgs {
		exports[p.ImportPath] = p.Export
	}
	gc := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(exports[path])
	})
	var out []checked
	for _, p := range pkgs {
		if p.DepOnly {
			continue
		}
		if p.Error != nil {
			return nil, nil, errors.New(p.Error.Err)
		}
		c, err := check(fset, p, gc)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, c)
	}
	return fset, out, nil
}

func list(dir string, patterns []string) ([]listed, error) {
	args := append([]string{"list", "-e", "-deps", "-export", "-compiled",
		"-json=ImportPath,Dir,Export,CompiledGoFiles,ImportMap,DepOnly,Error", "--"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var pkgs []listed
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p listed
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("go list: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

func check(fset *token.FileSet, p listed, gc types.Importer) (checked, error) {
	var files []*ast.File
	for _, name := range p.CompiledGoFiles {
		if !filepath.IsAbs(name) {
			name = filepath.Join(p.Dir, name)
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return checked{}, err
		}
		files = append(files, f)
	}
	info := &types.Info{
		Types:     map[ast.Expr]types.TypeAndValue{},
		Uses:      map[*ast.Ident]types.Object{},
		Instances: map[*ast.Ident]types.Instance{},
	}
	conf := types.Config{Importer: importerFunc(func(path string) (*types.Package, error) {
		if mapped, ok := p.ImportMap[path]; ok {
			path = mapped
		}
		return gc.Import(path)
	})}
	pkg, err := conf.Check(p.ImportPath, fset, files, info)
	return checked{pkg, files, info}, err
}

// registrations pairs each ssr.Typed call with the Page call whose Load it is. A Typed
// loader that is not written inside its Page call cannot be given a page name: that is an
// error rather than a page left untyped without a word.
func registrations(fset *token.FileSet, files []*ast.File, info *types.Info) ([]Page, error) {
	typed := map[*ast.CallExpr]types.Type{}
	var pageCalls, islandCalls []*ast.CallExpr
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if props := ssrTypeArg(call, "Typed", info); props != nil {
				typed[call] = props
			} else if props := ssrTypeArg(call, "TypedIsland", info); props != nil {
				islandCalls = append(islandCalls, call)
			} else if isPageMethod(call, info) {
				pageCalls = append(pageCalls, call)
			}
			return true
		})
	}
	var pages []Page
	for _, call := range pageCalls {
		load := loadOption(call)
		props, ok := typed[load]
		if !ok {
			continue
		}
		delete(typed, load)
		name := info.Types[call.Args[0]].Value
		if name == nil || name.Kind() != constant.String {
			return nil, fmt.Errorf("%s: the page of this ssr.Typed loader has no constant name, for ssr-types to name its props",
				fset.Position(call.Pos()))
		}
		deferred, err := deferredValues(fset, call, info)
		if err != nil {
			return nil, err
		}
		pages = append(pages, Page{Name: constant.StringVal(name), Props: props, Deferred: deferred, At: fset.Position(load.Pos())})
	}
	for _, call := range islandCalls {
		name := info.Types[call.Args[1]].Value
		if name == nil || name.Kind() != constant.String {
			return nil, fmt.Errorf("%s: this ssr.TypedIsland has no constant name, for ssr-types to name its props",
				fset.Position(call.Pos()))
		}
		pages = append(pages, Page{Name: constant.StringVal(name), Island: true, Props: ssrTypeArg(call, "TypedIsland", info), At: fset.Position(call.Pos())})
	}
	if len(typed) > 0 {
		first := slices.MinFunc(slices.Collect(maps.Keys(typed)), func(a, b *ast.CallExpr) int { return int(a.Pos() - b.Pos()) })
		return nil, fmt.Errorf("%s: ssr.Typed outside Page(name, ssr.PageOptions{Load: ssr.Typed(...)}): ssr-types cannot tell its page",
			fset.Position(first.Pos()))
	}
	return pages, nil
}

// deferredValues are the values named in the map[string]ssr.Deferred literals written
// inside a Page call (its Typed loader's), and in its map[string]ssr.RequestValue literal
// (PerRequest), by name: the page reads both from its `deferred` prop. A value given any other
// way (a map built elsewhere, an index assignment) is not seen: the page's type then does
// not name it.
func deferredValues(fset *token.FileSet, typed *ast.CallExpr, info *types.Info) ([]Deferred, error) {
	byName := map[string]Deferred{}
	at := map[string]token.Pos{}
	var err error
	ast.Inspect(typed, func(n ast.Node) bool {
		if err != nil {
			return false
		}
		lit, ok := n.(*ast.CompositeLit)
		if !ok || !isDeferredMap(info.Types[lit].Type) {
			return true
		}
		for _, elt := range lit.Elts {
			kv := elt.(*ast.KeyValueExpr) // a map literal's elements always are
			name := info.Types[kv.Key].Value
			if name == nil || name.Kind() != constant.String {
				err = fmt.Errorf("%s: a deferred value whose name is not constant: ssr-types cannot name it in the page's type",
					fset.Position(kv.Key.Pos()))
				return false
			}
			value := Deferred{Name: constant.StringVal(name), Type: types.Universe.Lookup("any").Type()}
			if call, ok := ast.Unparen(kv.Value).(*ast.CallExpr); ok {
				if t := ssrTypeArg(call, "Defer", info); t != nil {
					value.Type = t
				} else if t := ssrTypeArg(call, "FromRequest", info); t != nil {
					value.Type = t
				}
			}
			if seen, ok := byName[value.Name]; ok && !types.Identical(seen.Type, value.Type) {
				err = fmt.Errorf("%s: deferred value %q is %s here and %s at %s: one name, one type",
					fset.Position(kv.Pos()), value.Name, value.Type, seen.Type, fset.Position(at[value.Name]))
				return false
			}
			byName[value.Name] = value
			at[value.Name] = kv.Pos()
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	values := slices.Collect(maps.Values(byName))
	slices.SortFunc(values, func(a, b Deferred) int { return strings.Compare(a.Name, b.Name) })
	return values, nil
}

// isDeferredMap reports whether t is map[string]ssr.Deferred or map[string]ssr.RequestValue,
// or a type of its own with that underlying type.
func isDeferredMap(t types.Type) bool {
	m, ok := types.Unalias(t).Underlying().(*types.Map)
	if !ok || !types.Identical(m.Key(), types.Typ[types.String]) {
		return false
	}
	elem, ok := types.Unalias(m.Elem()).(*types.Named)
	return ok && elem.Obj().Pkg() != nil && elem.Obj().Pkg().Path() == ssrPackage &&
		(elem.Obj().Name() == "Deferred" || elem.Obj().Name() == "RequestValue")
}

// deferredString says which values a page defers, to compare two registrations of it.
func deferredString(values []Deferred) string {
	var b strings.Builder
	b.WriteString("{")
	for i, v := range values {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: %s", v.Name, types.TypeString(v.Type, nil))
	}
	b.WriteString("}")
	return b.String()
}

// ssrTypeArg is T of a call to the generic function ssr.<name>[T] (P of ssr.Typed[P]), or
// nil for any other call.
func ssrTypeArg(call *ast.CallExpr, name string, info *types.Info) types.Type {
	fun := ast.Unparen(call.Fun)
	switch f := fun.(type) {
	case *ast.IndexExpr:
		fun = f.X
	case *ast.IndexListExpr:
		fun = f.X
	}
	var id *ast.Ident
	switch f := fun.(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		id = f.Sel
	default:
		return nil
	}
	fn, ok := info.Uses[id].(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Pkg().Path() != ssrPackage || fn.Name() != name {
		return nil
	}
	inst, ok := info.Instances[id]
	if !ok || inst.TypeArgs.Len() != 1 {
		return nil
	}
	return inst.TypeArgs.At(0)
}

// isPageMethod reports whether call is (*ssr.Server).Page.
func isPageMethod(call *ast.CallExpr, info *types.Info) bool {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || len(call.Args) != 2 {
		return false
	}
	fn, ok := info.Uses[sel.Sel].(*types.Func)
	return ok && fn.Pkg() != nil && fn.Pkg().Path() == ssrPackage && fn.Name() == "Page" && fn.Signature().Recv() != nil
}

// loadOption is the call written as the Load of a Page call's PageOptions literal, if any.
func loadOption(page *ast.CallExpr) *ast.CallExpr {
	lit, ok := ast.Unparen(page.Args[1]).(*ast.CompositeLit)
	if !ok {
		return nil
	}
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if key, isIdent := kv.Key.(*ast.Ident); ok && isIdent && key.Name == "Load" {
			call, _ := ast.Unparen(kv.Value).(*ast.CallExpr)
			return call
		}
	}
	return nil
}
