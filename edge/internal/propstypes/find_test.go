package propstypes

import (
	"cmp"
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	const deferredPkg = "github.com/sidecar-ssr/sidecar-ssr/edge/internal/propstypes/testdata/deferred"
	for _, tc := range []struct {
		dir          string
		want         map[string]string // page → props type
		wantDeferred map[string]string // page → its deferred values, as deferredString writes them, if any
		wantErr      string
	}{
		{dir: "pages", want: map[string]string{
			"home":    "github.com/sidecar-ssr/sidecar-ssr/edge/internal/propstypes/testdata/pages.listing",
			"product": "github.com/sidecar-ssr/sidecar-ssr/edge/internal/propstypes/testdata/pages.ProductProps",
		}},
		{dir: "outside", wantErr: "outside.go:14:12: ssr.Typed outside Page(name, ssr.PageOptions{Load: ssr.Typed(...)})"},
		{dir: "conflict", wantErr: `page "product" has props`},
		{dir: "dynamic", wantErr: "dynamic.go:13:9: the page of this ssr.Typed loader has no constant name"},
		{dir: "deferred", want: map[string]string{
			"home":            deferredPkg + ".listing",
			"product-reviews": deferredPkg + ".productProps",
		}, wantDeferred: map[string]string{
			// A plain function (legacy, related) is any; a constant name is a name; two
			// literals in one loader add up.
			"product-reviews": `{"legacy": any, "more": *` + deferredPkg + `.moreReviews, "related": any, ` +
				`"reviews": []` + deferredPkg + `.Review, "stock": int}`,
			"home": `{"cart": ` + deferredPkg + `.cartLine, "plain": any}`,
		}},
		{dir: "dynamicdeferred", wantErr: "dynamicdeferred.go:17:5: a deferred value whose name is not constant: ssr-types cannot name it"},
		{dir: "deferredtypes", wantErr: `deferredtypes.go:22:5: deferred value "reviews" is []string here and int at`},
		{dir: "deferredsets", wantErr: `page "product" defers {"reviews": int} here and {} at`},
		{dir: "islands", want: map[string]string{
			"island:Cart":     "github.com/sidecar-ssr/sidecar-ssr/edge/internal/propstypes/testdata/islands.CartProps",
			"island:Featured": "github.com/sidecar-ssr/sidecar-ssr/edge/internal/propstypes/testdata/islands.featured",
		}},
		{dir: "dynamicisland", wantErr: "dynamicisland.go:11:2: this ssr.TypedIsland has no constant name"},
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
			gotDeferred := map[string]string{}
			for _, p := range pages {
				name := p.Name
				if p.Island {
					name = "island:" + name
				}
				got[name] = p.Props.String()
				gotDeferred[name] = deferredString(p.Deferred)
			}
			if len(got) != len(tc.want) || len(pages) != len(tc.want) {
				t.Fatalf("got pages %v, want %v", got, tc.want)
			}
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("page %s: got props %s, want %s", name, got[name], want)
				}
				wantDeferred := cmp.Or(tc.wantDeferred[name], "{}")
				if gotDeferred[name] != wantDeferred {
					t.Errorf("page %s: got deferred values %s, want %s", name, gotDeferred[name], wantDeferred)
				}
			}
		})
	}
}
