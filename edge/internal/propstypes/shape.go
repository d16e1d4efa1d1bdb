package propstypes

import (
	"fmt"
	"go/types"
	"slices"
	"strings"
	"unicode"
)

// A Shape is what a Go type looks like once encoding/json has marshalled it.
type Shape struct {
	Kind   Kind
	Elem   *Shape  // Array, Record, Nullable
	Def    *Def    // Ref
	Fields []Field // Object
}

// Kind is a Shape's kind.
type Kind int

const (
	Unknown  Kind = iota // anything: an interface, json.RawMessage, a json.Marshaler
	Boolean              // bool
	Integer              // an integer kind
	Number               // a float kind
	String               // string, time.Time, []byte, an encoding.TextMarshaler
	Array                // a slice or an array
	Record               // a map
	Object               // an unnamed struct
	Ref                  // a named struct: Def
	Nullable             // a pointer: Elem or null
)

// A Field is a struct field as JSON has it.
type Field struct {
	Name string
	// Optional: the field may be absent (omitempty on a type that can be empty, omitzero,
	// or promoted through an embedded pointer that may be nil).
	Optional bool
	Shape    *Shape
}

// A Def is a named struct type, declared once and referred to by name.
type Def struct {
	Name   string // in TypeScript and the schema
	GoName string // package path and name
	Fields []Field

	pkgName, typeName string
}

// A Contract is every page's props and deferred values as shapes, with the named types
// they use.
type Contract struct {
	Pages []PageShape
	Defs  []*Def // by Name
}

// A PageShape is one page's props and deferred values, or an island's props (Island).
type PageShape struct {
	Name     string
	Island   bool
	Props    *Shape
	Deferred []DeferredShape // by Name
}

// A DeferredShape is one deferred value: any JSON, an object or not.
type DeferredShape struct {
	Name  string
	Value *Shape
}

// Convert gives the shapes of pages' props and deferred values.
func Convert(pages []Page) (*Contract, error) {
	c := &converter{defs: map[string]*Def{}, expanding: map[string]bool{}}
	contract := &Contract{}
	for _, page := range pages {
		c.path = []string{types.TypeString(page.Props, shortName)}
		shape, err := c.shape(page.Props)
		if err != nil {
			return nil, fmt.Errorf("page %q: %w", page.Name, err)
		}
		if !objectLike(shape) {
			return nil, fmt.Errorf("page %q: props %s: its JSON is not an object (use a struct)", page.Name, page.Props)
		}
		ps := PageShape{Name: page.Name, Island: page.Island, Props: shape}
		for _, d := range page.Deferred {
			c.path = []string{types.TypeString(d.Type, shortName)}
			value, err := c.shape(d.Type)
			if err != nil {
				return nil, fmt.Errorf("page %q: deferred %q: %w", page.Name, d.Name, err)
			}
			ps.Deferred = append(ps.Deferred, DeferredShape{Name: d.Name, Value: value})
		}
		contract.Pages = append(contract.Pages, ps)
	}
	if err := c.name(); err != nil {
		return nil, err
	}
	for _, d := range c.defs {
		contract.Defs = append(contract.Defs, d)
	}
	slices.SortFunc(contract.Defs, func(a, b *Def) int { return strings.Compare(a.Name, b.Name) })
	return contract, nil
}

func objectLike(s *Shape) bool {
	switch s.Kind {
	case Unknown, Record, Object, Ref:
		return true
	case Nullable:
		return objectLike(s.Elem)
	}
	return false
}

func shortName(p *types.Package) string { return p.Name() }

type converter struct {
	defs      map[string]*Def // by GoName
	expanding map[string]bool // generic instances being inlined: one that contains itself never ends
	path      []string        // where the type being converted is, for errors
}

func (c *converter) fail(format string, args ...any) error {
	return fmt.Errorf("%s: %s", strings.Join(c.path, "."), fmt.Sprintf(format, args...))
}

func (c *converter) shape(t types.Type) (*Shape, error) {
	t = types.Unalias(t)
	if named, ok := t.(*types.Named); ok && named.Obj().Pkg() != nil {
		switch named.Obj().Pkg().Path() + "." + named.Obj().Name() {
		case "time.Time":
			return &Shape{Kind: String}, nil
		case "encoding/json.RawMessage":
			return &Shape{Kind: Unknown}, nil
		case "encoding/json.Number":
			return &Shape{Kind: Number}, nil
		}
	}
	if ptr, ok := t.(*types.Pointer); ok {
		elem, err := c.shape(ptr.Elem())
		if err != nil {
			return nil, err
		}
		return nullable(elem), nil
	}
	if _, isInterface := t.Underlying().(*types.Interface); !isInterface {
		// Marshalers choose their own JSON; encoding/json calls a pointer method too when the
		// value is addressable, which a field reached through a pointer is.
		if hasMethod(t, "MarshalJSON") {
			return &Shape{Kind: Unknown}, nil
		}
		if hasMethod(t, "MarshalText") {
			return &Shape{Kind: String}, nil
		}
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		return c.basic(u)
	case *types.Interface:
		return &Shape{Kind: Unknown}, nil
	case *types.Pointer:
		elem, err := c.shape(u.Elem())
		if err != nil {
			return nil, err
		}
		return nullable(elem), nil
	case *types.Slice:
		if b, ok := u.Elem().Underlying().(*types.Basic); ok && b.Kind() == types.Uint8 && !hasMethod(u.Elem(), "MarshalJSON") && !hasMethod(u.Elem(), "MarshalText") {
			return &Shape{Kind: String}, nil // base64
		}
		return c.array(u.Elem())
	case *types.Array:
		return c.array(u.Elem())
	case *types.Map:
		if !mapKey(u.Key()) {
			return nil, c.fail("map key %s cannot be a JSON object key", u.Key())
		}
		c.path = append(c.path, "[key]")
		elem, err := c.shape(u.Elem())
		c.path = c.path[:len(c.path)-1]
		if err != nil {
			return nil, err
		}
		return &Shape{Kind: Record, Elem: elem}, nil
	case *types.Struct:
		return c.structShape(t)
	}
	return nil, c.fail("%s cannot be marshalled to JSON", t)
}

func (c *converter) basic(b *types.Basic) (*Shape, error) {
	switch info := b.Info(); {
	case info&types.IsBoolean != 0:
		return &Shape{Kind: Boolean}, nil
	case info&types.IsInteger != 0:
		return &Shape{Kind: Integer}, nil
	case info&types.IsFloat != 0:
		return &Shape{Kind: Number}, nil
	case info&types.IsString != 0:
		return &Shape{Kind: String}, nil
	}
	return nil, c.fail("%s cannot be marshalled to JSON", b)
}

func (c *converter) array(elem types.Type) (*Shape, error) {
	c.path = append(c.path, "[]")
	s, err := c.shape(elem)
	c.path = c.path[:len(c.path)-1]
	if err != nil {
		return nil, err
	}
	return &Shape{Kind: Array, Elem: s}, nil
}

func nullable(s *Shape) *Shape {
	if s.Kind == Unknown || s.Kind == Nullable {
		return s
	}
	return &Shape{Kind: Nullable, Elem: s}
}

// structShape refers to a named struct by name, declaring it on first use (before its
// fields, so that a type that contains itself refers to itself), and inlines an unnamed
// one or an instance of a generic type.
func (c *converter) structShape(t types.Type) (*Shape, error) {
	named, isNamed := t.(*types.Named)
	if !isNamed || named.TypeArgs().Len() > 0 {
		key := types.TypeString(t, nil)
		if c.expanding[key] {
			return nil, c.fail("%s contains itself, which an unnamed or generic type cannot be declared as", t)
		}
		c.expanding[key] = true
		defer delete(c.expanding, key)
		fields, err := c.fields(t)
		if err != nil {
			return nil, err
		}
		return &Shape{Kind: Object, Fields: fields}, nil
	}
	key := types.TypeString(t, nil)
	if d, ok := c.defs[key]; ok {
		return &Shape{Kind: Ref, Def: d}, nil
	}
	d := &Def{GoName: key, typeName: named.Obj().Name()}
	if pkg := named.Obj().Pkg(); pkg != nil {
		d.pkgName = pkg.Name()
	}
	c.defs[key] = d
	path := c.path
	c.path = []string{types.TypeString(t, shortName)}
	fields, err := c.fields(t)
	c.path = path
	if err != nil {
		return nil, err
	}
	d.Fields = fields
	return &Shape{Kind: Ref, Def: d}, nil
}

func (c *converter) fields(t types.Type) ([]Field, error) {
	found := jsonFields(t)
	out := make([]Field, 0, len(found))
	for _, f := range found {
		c.path = append(c.path, f.goName)
		shape, err := c.shape(f.typ)
		if err == nil && f.quoted {
			shape = quote(shape)
		}
		c.path = c.path[:len(c.path)-1]
		if err != nil {
			return nil, err
		}
		omitted := f.omit == "omitzero" || (f.omit == "omitempty" && canBeEmpty(f.typ))
		if omitted && shape.Kind == Nullable {
			shape = shape.Elem // nil is left out, never null
		}
		out = append(out, Field{Name: f.name, Optional: omitted || f.viaNil, Shape: shape})
	}
	return out, nil
}

// quote is a ",string" field: encoding/json quotes bools, numbers and strings, directly
// or through a pointer, and ignores the option on anything else.
func quote(s *Shape) *Shape {
	switch s.Kind {
	case Boolean, Integer, Number, String:
		return &Shape{Kind: String}
	case Nullable:
		if inner := quote(s.Elem); inner != s.Elem {
			return nullable(inner)
		}
	}
	return s
}

// canBeEmpty reports whether omitempty can leave a value of t out: false, 0, "", and nil
// or empty pointers, interfaces, slices, maps; never a struct.
func canBeEmpty(t types.Type) bool {
	switch u := t.Underlying().(type) {
	case *types.Basic, *types.Pointer, *types.Interface, *types.Slice, *types.Map:
		return true
	case *types.Array:
		return u.Len() == 0
	}
	return false
}

func hasMethod(t types.Type, name string) bool {
	if _, isPtr := t.(*types.Pointer); !isPtr {
		t = types.NewPointer(t)
	}
	return types.NewMethodSet(t).Lookup(nil, name) != nil
}

// mapKey: encoding/json takes strings, integers and encoding.TextMarshalers as keys.
func mapKey(t types.Type) bool {
	if hasMethod(t, "MarshalText") {
		return true
	}
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&(types.IsString|types.IsInteger) != 0
}

// name gives each named type its TypeScript name: its Go name, exported; when two types
// would share one, each is prefixed with its package's name.
func (c *converter) name() error {
	byName := map[string][]*Def{}
	for _, d := range c.defs {
		name := exported(d.typeName)
		byName[name] = append(byName[name], d)
	}
	taken := map[string]string{}
	for name, defs := range byName {
		for _, d := range defs {
			d.Name = name
			if len(defs) > 1 {
				d.Name = exported(d.pkgName) + name
			}
			if other, ok := taken[d.Name]; ok {
				return fmt.Errorf("%s and %s would both be %s in TypeScript: rename one", other, d.GoName, d.Name)
			}
			taken[d.Name] = d.GoName
		}
	}
	return nil
}

func exported(name string) string {
	if name == "" {
		return name
	}
	r := []rune(name)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}
