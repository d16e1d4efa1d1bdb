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

// TestNoInternalTypeInTheAPI: a shop's module cannot name edge/internal's types, so none
// may appear in what this package exports (an exported function's signature, an exported
// field, a type it defines from one).
func TestNoInternalTypeInTheAPI(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range pkgs["ssr"].Files {
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
