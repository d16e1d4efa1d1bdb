package propstypes

import (
	"bytes"
	"encoding/json"
)

// JSONSchema is the contract as a JSON Schema (2020-12) of an object whose properties are
// the pages: what the renderer checks the props it receives against in development
// (renderer/src/worker/props-check.js, which reads only the keywords written here). It
// describes props only: deferred values are not props, and the renderer checks none.
func (c *Contract) JSONSchema() []byte {
	pages := object{}
	for _, p := range c.Pages {
		name := p.Name
		if p.Island {
			name = "island:" + name // as the renderer names an island's render
		}
		pages = append(pages, member{name, schema(p.Props)})
	}
	inProps := c.propsDefs()
	defs := object{}
	for _, d := range c.Defs {
		if inProps[d] {
			defs = append(defs, member{d.Name, append(object{{"$comment", "Go: " + d.GoName}}, objectSchema(d.Fields)...)})
		}
	}
	doc := object{
		{"$comment", Header},
		{"$schema", "https://json-schema.org/draft/2020-12/schema"},
		{"type", "object"},
		{"properties", pages},
		{"$defs", defs},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err) // strings and objects of them always marshal
	}
	return append(b, '\n')
}

// propsDefs are the named types the pages' props use, directly or through one another.
func (c *Contract) propsDefs() map[*Def]bool {
	used := map[*Def]bool{}
	var walk func(s *Shape)
	walk = func(s *Shape) {
		switch s.Kind {
		case Array, Record, Nullable:
			walk(s.Elem)
		case Object:
			for _, f := range s.Fields {
				walk(f.Shape)
			}
		case Ref:
			if !used[s.Def] {
				used[s.Def] = true
				for _, f := range s.Def.Fields {
					walk(f.Shape)
				}
			}
		}
	}
	for _, p := range c.Pages {
		walk(p.Props)
	}
	return used
}

func schema(s *Shape) object {
	switch s.Kind {
	case Boolean:
		return object{{"type", "boolean"}}
	case Integer:
		return object{{"type", "integer"}}
	case Number:
		return object{{"type", "number"}}
	case String:
		return object{{"type", "string"}}
	case Array:
		return object{{"type", "array"}, {"items", schema(s.Elem)}}
	case Record:
		return object{{"type", "object"}, {"additionalProperties", schema(s.Elem)}}
	case Object:
		return objectSchema(s.Fields)
	case Ref:
		return object{{"$ref", "#/$defs/" + s.Def.Name}}
	case Nullable:
		return object{{"anyOf", []object{schema(s.Elem), {{"type", "null"}}}}}
	}
	return object{}
}

func objectSchema(fields []Field) object {
	properties := object{}
	required := []string{}
	for _, f := range fields {
		properties = append(properties, member{f.Name, schema(f.Shape)})
		if !f.Optional {
			required = append(required, f.Name)
		}
	}
	o := object{{"type", "object"}, {"properties", properties}}
	if len(required) > 0 {
		o = append(o, member{"required", required})
	}
	return append(o, member{"additionalProperties", false})
}

// object is a JSON object that keeps its members in order: the fields' order is Go's.
type object []member

type member struct {
	key   string
	value any
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		key, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		value, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(key)
		b.WriteByte(':')
		b.Write(value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
