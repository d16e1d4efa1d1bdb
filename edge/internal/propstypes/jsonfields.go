package propstypes

import (
	"go/types"
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// Which fields encoding/json encodes and under which names, followed here as its
// typeFields does, so that the TypeScript says what Go really sends.

// jsonField is a field encoding/json encodes, found as its typeFields finds them.
type jsonField struct {
	name   string
	tagged bool
	index  []int
	typ    types.Type
	omit   string // "omitempty", "omitzero" or ""
	quoted bool
	viaNil bool // promoted through an embedded pointer
	goName string
}

// jsonFields are t's fields as encoding/json's typeFields sees them: exported fields and
// those promoted from embedded structs, named by their tags, the shallowest (then the
// tagged) one winning a name and a tie dropping it, in index order.
func jsonFields(t types.Type) []jsonField {
	type level struct {
		typ    types.Type
		index  []int
		viaNil bool
	}
	var fields []jsonField
	visited := map[string]bool{}
	next := []level{{typ: t}}
	for len(next) > 0 {
		current := next
		next = nil
		count := map[string]int{}
		for _, l := range current {
			count[types.TypeString(l.typ, nil)]++
		}
		for _, l := range current {
			key := types.TypeString(l.typ, nil)
			if visited[key] {
				continue
			}
			visited[key] = true
			st := l.typ.Underlying().(*types.Struct)
			for i := range st.NumFields() {
				sf := st.Field(i)
				ft := types.Unalias(sf.Type())
				_, isPtr := ft.(*types.Pointer)
				if isPtr {
					ft = types.Unalias(ft.(*types.Pointer).Elem())
				}
				_, isStruct := ft.Underlying().(*types.Struct)
				if sf.Embedded() {
					if !sf.Exported() && !isStruct {
						continue
					}
				} else if !sf.Exported() {
					continue
				}
				tag := reflect.StructTag(st.Tag(i)).Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTag(name) {
					name = ""
				}
				index := append(slices.Clone(l.index), i)
				if name != "" || !sf.Embedded() || !isStruct {
					f := jsonField{name: name, tagged: name != "", index: index, typ: sf.Type(), viaNil: l.viaNil,
						goName: sf.Name()}
					if f.name == "" {
						f.name = sf.Name()
					}
					for opt := range strings.SplitSeq(opts, ",") {
						switch opt {
						case "omitempty", "omitzero":
							if f.omit != "omitzero" {
								f.omit = opt
							}
						case "string":
							f.quoted = true
						}
					}
					fields = append(fields, f)
					if count[key] > 1 {
						// Two embeddings of one type at one depth: each name they give is a
						// tie, which drops it, as encoding/json does.
						fields = append(fields, f)
					}
					continue
				}
				next = append(next, level{typ: ft, index: index, viaNil: l.viaNil || isPtr})
			}
		}
	}
	slices.SortStableFunc(fields, func(a, b jsonField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := len(a.index) - len(b.index); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	var kept []jsonField
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		if dominant, ok := dominantField(fields[i:j]); ok {
			kept = append(kept, dominant)
		}
		i = j
	}
	slices.SortFunc(kept, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	return kept
}

// dominantField is encoding/json's: fields share a name, sorted shallowest and tagged first.
func dominantField(fields []jsonField) (jsonField, bool) {
	if len(fields) > 1 && len(fields[0].index) == len(fields[1].index) && fields[0].tagged == fields[1].tagged {
		return jsonField{}, false
	}
	return fields[0], true
}

// validTag is encoding/json's isValidTag.
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
