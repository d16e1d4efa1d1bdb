package propstypes

import (
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	for _, tc := range []struct {
		dir     string
		want    map[string]string // page → props type
		wantErr string
	}{
		{dir: "pages", want: map[string]string{
			"home":    "github.com/sidecar-ssr/sidecar-ssr/edge/internal/propstypes/testdata/pages.listing",
			"product": "github.com/sidecar-ssr/sidecar-ssr/edge/internal/propstypes/testdata/pages.ProductProps",
		}},
		{dir: "outside", wantErr: "outside.go:14:12: ssr.Typed outside Page(name, ssr.PageOptions{Load: ssr.Typed(...)})"},
		{dir: "conflict", wantErr: `page "product" has props`},
		{dir: "dynamic", wantErr: "dynamic.go:13:9: the page of this ssr.Typed loader has no constant name"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			pages, err := Find(".", "./testdata/"+tc.dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, p := range pages {
				got[p.Name] = p.Props.String()
			}
			if len(got) != len(tc.want) || len(pages) != len(tc.want) {
				t.Fatalf("got pages %v, want %v", got, tc.want)
			}
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("page %s: got props %s, want %s", name, got[name], want)
				}
			}
		})
	}
}
