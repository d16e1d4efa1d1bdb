package propstypes

import (
	"encoding/json"
	"go/types"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// convert converts the type Props that files (path → source) declare, in a module of
// their own, as the props of a page named "page".
func convert(t *testing.T, files map[string]string) (*Contract, error) {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module example.com/shop\n\ngo 1.26\n"
	for name, src := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, pkgs, err := load(dir, []string{"."})
	if err != nil {
		t.Fatal(err)
	}
	props := pkgs[0].pkg.Scope().Lookup("Props")
	if props == nil {
		t.Fatal("no type Props")
	}
	return Convert([]Page{{Name: "page", Props: props.Type()}})
}

// tsHead is what comes before the interfaces for a page that defers nothing
// (TestTypeScriptDeferred has the text of PageDeferred and PageComponentProps).
const tsHead = "// " + Header + `

/** The props of each page, by the name the Go server registers it under. */
export interface PageProps {
  page: Props;
}
` + noIslands + pageDeferredDoc + "export interface PageDeferred {}\n" + pageComponentProps

// noIslands is IslandProps when no island is typed.
const noIslands = "\n/** The props of each island, by the name the Go server declares it under (ssr.TypedIsland). */\nexport interface IslandProps {\n}\n"

func TestTypeScript(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string // after tsHead
	}{
		{
			name: "json tags",
			files: map[string]string{"props.go": `package shop

type Props struct {
	Renamed    string ` + "`json:\"renamed\"`" + `
	Untagged   int
	Skipped    string ` + "`json:\"-\"`" + `
	Dash       string ` + "`json:\"-,\"`" + `
	Empty      string ` + "`json:\"empty,omitempty\"`" + `
	EmptyPtr   *int ` + "`json:\"emptyPtr,omitempty\"`" + `
	EmptyItem  Item ` + "`json:\"emptyItem,omitempty\"`" + `
	Zero       Item ` + "`json:\"zero,omitzero\"`" + `
	Quoted     int64 ` + "`json:\"quoted,string\"`" + `
	QuotedPtr  *bool ` + "`json:\"quotedPtr,string\"`" + `
	KebabCase  string ` + "`json:\"kebab-case\"`" + `
	Invalid    string ` + "`json:\"in\\\\valid\"`" + `
	unexported string
}

type Item struct{ ID int ` + "`json:\"id\"`" + ` }
`},
			want: `
/** Go: example.com/shop.Item */
export interface Item {
  id: number;
}

/** Go: example.com/shop.Props */
export interface Props {
  renamed: string;
  Untagged: number;
  "-": string;
  empty?: string;
  emptyPtr?: number;
  emptyItem: Item;
  zero?: Item;
  quoted: string;
  quotedPtr: string | null;
  "kebab-case": string;
  Invalid: string;
}
`,
		},
		{
			name: "types",
			files: map[string]string{"props.go": `package shop

import (
	"encoding/json"
	"net/netip"
	"time"
)

type Props struct {
	At       time.Time          ` + "`json:\"at\"`" + `
	Until    *time.Time         ` + "`json:\"until\"`" + `
	Raw      json.RawMessage    ` + "`json:\"raw\"`" + `
	Count    json.Number        ` + "`json:\"count\"`" + `
	Any      any                ` + "`json:\"any\"`" + `
	Bytes    []byte             ` + "`json:\"bytes\"`" + `
	Hash     [2]byte            ` + "`json:\"hash\"`" + `
	Rating   float64            ` + "`json:\"rating\"`" + `
	Flag     bool               ` + "`json:\"flag\"`" + `
	Cents    Cents              ` + "`json:\"cents\"`" + `
	Stock    map[string]int     ` + "`json:\"stock\"`" + `
	ByID     map[int]*Item      ` + "`json:\"byId\"`" + `
	Maybe    []*Item            ` + "`json:\"maybe\"`" + `
	Grid     [][]string         ` + "`json:\"grid\"`" + `
	Addr     netip.Addr         ` + "`json:\"addr\"`" + `
	Custom   Custom             ` + "`json:\"custom\"`" + `
	Inline   struct{ A string } ` + "`json:\"inline\"`" + `
	Page     Page[Item]         ` + "`json:\"page\"`" + `
}

type Cents int

type Item struct{ ID int ` + "`json:\"id\"`" + ` }

type Custom struct{ secret string }

func (*Custom) MarshalJSON() ([]byte, error) { return []byte("1"), nil }

type Page[T any] struct {
	Items []T ` + "`json:\"items\"`" + `
}
`},
			want: `
/** Go: example.com/shop.Item */
export interface Item {
  id: number;
}

/** Go: example.com/shop.Props */
export interface Props {
  at: string;
  until: string | null;
  raw: unknown;
  count: number;
  any: unknown;
  bytes: string;
  hash: number[];
  rating: number;
  flag: boolean;
  cents: number;
  stock: Record<string, number>;
  byId: Record<string, Item | null>;
  maybe: (Item | null)[];
  grid: string[][];
  addr: string;
  custom: unknown;
  inline: {
    A: string;
  };
  page: {
    items: Item[];
  };
}
`,
		},
		{
			name: "embedding",
			files: map[string]string{"props.go": `package shop

type Props struct {
	Base
	*Audit
	Named Base ` + "`json:\"named\"`" + `
	Left
	Right
	Name string ` + "`json:\"name\"`" + `
}

type Base struct {
	ID   int    ` + "`json:\"id\"`" + `
	Name string ` + "`json:\"name\"`" + `
}

type Audit struct{ By string ` + "`json:\"by\"`" + ` }

type Left struct{ Side string }

type Right struct{ Side string }
`},
			want: `
/** Go: example.com/shop.Base */
export interface Base {
  id: number;
  name: string;
}

/** Go: example.com/shop.Props */
export interface Props {
  id: number;
  by?: string;
  named: Base;
  name: string;
}
`,
		},
		{
			name: "a type that contains itself",
			files: map[string]string{"props.go": `package shop

type Props struct {
	Root Node ` + "`json:\"root\"`" + `
}

type Node struct {
	Name     string ` + "`json:\"name\"`" + `
	Children []Node ` + "`json:\"children\"`" + `
	Parent   *Node  ` + "`json:\"parent,omitempty\"`" + `
}
`},
			want: `
/** Go: example.com/shop.Node */
export interface Node {
  name: string;
  children: Node[];
  parent?: Node;
}

/** Go: example.com/shop.Props */
export interface Props {
  root: Node;
}
`,
		},
		{
			name: "one name in two packages",
			files: map[string]string{
				"props.go": `package shop

import "example.com/shop/catalog"

type Props struct {
	Mine   Item         ` + "`json:\"mine\"`" + `
	Theirs catalog.Item ` + "`json:\"theirs\"`" + `
}

type Item struct{ ID int ` + "`json:\"id\"`" + ` }
`,
				"catalog/catalog.go": `package catalog

type Item struct{ SKU string ` + "`json:\"sku\"`" + ` }
`,
			},
			want: `
/** Go: example.com/shop/catalog.Item */
export interface CatalogItem {
  sku: string;
}

/** Go: example.com/shop.Props */
export interface Props {
  mine: ShopItem;
  theirs: CatalogItem;
}

/** Go: example.com/shop.Item */
export interface ShopItem {
  id: number;
}
`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := convert(t, tc.files)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := string(c.TypeScript()), tsHead+tc.want; got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestTypeScriptDeferred: the values of ssr.Defer are typed, a plain function's are
// unknown, and a named type both the props and a value use is declared once.
func TestTypeScriptDeferred(t *testing.T) {
	pages, err := Find(".", "./testdata/deferred")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Convert(pages)
	if err != nil {
		t.Fatal(err)
	}
	want := "// " + Header + `

/** The props of each page, by the name the Go server registers it under. */
export interface PageProps {
  home: Listing;
  "product-reviews": ProductProps;
}
` + noIslands + `
/**
 * The values each page's loader defers (Result.Deferred) and its values per request
 * (PageOptions.PerRequest), by page and by name: what the promises of its component's
 * ` + "`deferred`" + ` prop resolve to. A value given without ssr.Defer or ssr.FromRequest is unknown.
 */
export interface PageDeferred {
  home: {
    cart: CartLine;
    plain: unknown;
  };
  "product-reviews": {
    legacy: unknown;
    more: MoreReviews | null;
    related: unknown;
    reviews: Review[];
    stock: number;
  };
}

/**
 * What page N's component receives: its props and, when its loader defers values, the
 * ` + "`deferred`" + ` prop, one promise per value, for React's use().
 */
export type PageComponentProps<N extends keyof PageProps> = PageProps[N] &
  (N extends keyof PageDeferred ? { deferred: { [K in keyof PageDeferred[N]]: Promise<PageDeferred[N][K]> } } : {});

/** Go: github.com/sidecar-ssr/sidecar-ssr/edge/internal/propstypes/testdata/deferred.cartLine */
export interface CartLine {
  quantity: number;
}

/** Go: github.com/sidecar-ssr/sidecar-ssr/edge/internal/propstypes/testdata/deferred.listing */
export interface Listing {
  page: number;
}

/** Go: github.com/sidecar-ssr/sidecar-ssr/edge/internal/propstypes/testdata/deferred.moreReviews */
export interface MoreReviews {
  count: number;
}

/** Go: github.com/sidecar-ssr/sidecar-ssr/edge/internal/propstypes/testdata/deferred.productProps */
export interface ProductProps {
  name: string;
  top: Review;
}

/** Go: github.com/sidecar-ssr/sidecar-ssr/edge/internal/propstypes/testdata/deferred.Review */
export interface Review {
  author: string;
  stars: number;
}
`
	if got := string(c.TypeScript()); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	var schema struct {
		Defs map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(c.JSONSchema(), &schema); err != nil {
		t.Fatal(err)
	}
	if _, ok := schema.Defs["MoreReviews"]; ok || len(schema.Defs) != 3 {
		t.Errorf("got the schema's $defs %v, want the props' three (a type only a deferred value uses is not a prop's)", slices.Sorted(maps.Keys(schema.Defs)))
	}
}

func TestConvertErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"a channel", "type Props struct {\n\tItems []Item\n}\n\ntype Item struct{ Done chan bool }\n",
			`page "page": shop.Item.Done: chan bool cannot be marshalled to JSON`},
		{"a func", "type Props struct{ F func() }\n", `page "page": shop.Props.F: func() cannot be marshalled to JSON`},
		{"a struct map key", "type Props struct{ M map[struct{}]int }\n", "shop.Props.M: map key struct{} cannot be a JSON object key"},
		{"props that are not an object", "type Props []string\n", `page "page": props example.com/shop.Props: its JSON is not an object`},
		{"a generic type that contains itself", "type Props struct{ L List[int] }\n\ntype List[T any] struct{ Next *List[T] }\n",
			"contains itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := convert(t, map[string]string{"props.go": "package shop\n\n" + tc.src})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestConvertDeferredErrors: a deferred value that cannot be JSON stops the generator with
// its page and name; unlike props, one that is not an object is fine.
func TestConvertDeferredErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value types.Type
		want  string
	}{
		{"a channel", types.NewChan(types.SendRecv, types.Typ[types.Int]), `page "page": deferred "reviews": chan int: chan int cannot be marshalled to JSON`},
		{"a list, not an object", types.NewSlice(types.Typ[types.String]), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Convert([]Page{{Name: "page", Props: types.NewStruct(nil, nil),
				Deferred: []Deferred{{Name: "reviews", Type: tc.value}}}})
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tc.want {
				t.Errorf("got error %q, want %q", gotErr, tc.want)
			}
		})
	}
}

func TestJSONSchema(t *testing.T) {
	c, err := convert(t, map[string]string{"props.go": `package shop

type Props struct {
	ID    int            ` + "`json:\"id\"`" + `
	Price *float64       ` + "`json:\"price\"`" + `
	Tags  []string       ` + "`json:\"tags,omitempty\"`" + `
	Stock map[string]int ` + "`json:\"stock\"`" + `
	Any   any            ` + "`json:\"any\"`" + `
}
`})
	if err != nil {
		t.Fatal(err)
	}
	got := string(c.JSONSchema())
	want := `{
  "$comment": "` + Header + `",
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "page": {
      "$ref": "#/$defs/Props"
    }
  },
  "$defs": {
    "Props": {
      "$comment": "Go: example.com/shop.Props",
      "type": "object",
      "properties": {
        "id": {
          "type": "integer"
        },
        "price": {
          "anyOf": [
            {
              "type": "number"
            },
            {
              "type": "null"
            }
          ]
        },
        "tags": {
          "type": "array",
          "items": {
            "type": "string"
          }
        },
        "stock": {
          "type": "object",
          "additionalProperties": {
            "type": "integer"
          }
        },
        "any": {}
      },
      "required": [
        "id",
        "price",
        "stock",
        "any"
      ],
      "additionalProperties": false
    }
  }
}
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if !json.Valid([]byte(got)) {
		t.Error("not JSON")
	}
}
