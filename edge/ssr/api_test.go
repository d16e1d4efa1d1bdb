package ssr

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strconv"
	"strings"
	"testing"
)

// The surface's budget: what go doc -all lists, counted. A change that adds to it lowers
// something else, or raises the budget with a reason in its commit; one that takes from it
// lowers the budget, so the surface cannot grow back unnoticed. docs/go.md's "What changed"
// tables say each change to the surface.
const (
	maxExportedFields = 48 // of exported struct types
	maxServerMethods  = 12 // exported, on *Server
)

// TestSurfaceWithinItsBudget: the public package is no larger than its budget.
func TestSurfaceWithinItsBudget(t *testing.T) {
	_, files := sources(t)
	var fields, methods []string
	for _, file := range files {
		for _, decl := range file.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if star, ok := receiverStar(d.Recv); ok && star == "Server" && d.Name.IsExported() {
					methods = append(methods, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok || !ts.Name.IsExported() {
						continue
					}
					if st, ok := ts.Type.(*ast.StructType); ok {
						for _, f := range st.Fields.List {
							for _, name := range f.Names {
								if name.IsExported() {
									fields = append(fields, ts.Name.Name+"."+name.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d exported struct fields, %d methods on *Server", len(fields), len(methods))
	if len(fields) > maxExportedFields {
		t.Errorf("%d exported struct fields, over the budget of %d: %v", len(fields), maxExportedFields, fields)
	}
	if len(methods) > maxServerMethods {
		t.Errorf("%d methods on *Server, over the budget of %d: %v", len(methods), maxServerMethods, methods)
	}
}

// sources are the package's own files, parsed: what it exports, tests left out.
func sources(t *testing.T) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fset, pkgs["ssr"].Files
}

// receiverStar names the type of a *T receiver.
func receiverStar(recv *ast.FieldList) (string, bool) {
	if recv == nil {
		return "", false
	}
	star, ok := recv.List[0].Type.(*ast.StarExpr)
	if !ok {
		return "", false
	}
	id, ok := star.X.(*ast.Ident)
	if !ok {
		return "", false
	}
	return id.Name, true
}

// TestNoInternalTypeInTheAPI: a shop's module cannot name edge/internal's types, so none
// may appear in what this package exports (an exported function's signature, an exported
// field, a type it defines from one).
func TestNoInternalTypeInTheAPI(t *testing.T) {
	fset, files := sources(t)
	for _, file := range files {
		internal := map[string]string{} // local name → import path
		for _, imp := range file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !strings.Contains(path, "/internal/") {
				continue
			}
			name := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			internal[name] = path
		}
		check := func(where string, n ast.Node) {
			ast.Inspect(n, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] != "" {
						t.Errorf("%s: %s uses %s.%s from %s", fset.Position(sel.Pos()), where, id.Name, sel.Sel.Name, internal[id.Name])
					}
				}
				return true
			})
		}
		for _, decl := range file.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && (d.Recv == nil || exportedReceiver(d.Recv)) {
					check(d.Name.Name, d.Type)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok || !ts.Name.IsExported() {
						continue
					}
					st, isStruct := ts.Type.(*ast.StructType)
					if !isStruct {
						check(ts.Name.Name, ts.Type)
						continue
					}
					for _, f := range st.Fields.List {
						for _, name := range f.Names {
							if name.IsExported() {
								check(ts.Name.Name+"."+name.Name, f.Type)
							}
						}
						if len(f.Names) == 0 { // embedded: its methods and fields are exported
							check(ts.Name.Name+" (embedded)", f.Type)
						}
					}
				}
			}
		}
	}
}

func exportedReceiver(recv *ast.FieldList) bool {
	typ := recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.IsExported()
}
