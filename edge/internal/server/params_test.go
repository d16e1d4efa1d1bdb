package server

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRenderRequestParams: the render request holds the path values of the pattern the
// page was mounted at, and, for routers that set path values without naming the pattern
// (gorilla, chi before 5.2), those the configured route names.
func TestRenderRequestParams(t *testing.T) {
	tests := []struct {
		name  string
		route string // Route.Pattern: the edge's config pattern, or PageOptions.Route (the page name by default)
		mount func(http.Handler) http.Handler
		path  string
		want  map[string]string
	}{
		{
			name: "config route on a ServeMux", route: "GET /products/{id}", path: "/products/7",
			mount: onMux("GET /products/{id}"), want: map[string]string{"id": "7"},
		},
		{
			name: "ServeMux, route is the page name", route: "product", path: "/products/7",
			mount: onMux("GET /products/{id}"), want: map[string]string{"id": "7"},
		},
		{
			name: "ServeMux, two wildcards", route: "item", path: "/shops/s1/items/i2",
			mount: onMux("GET /shops/{shop}/items/{item}"), want: map[string]string{"shop": "s1", "item": "i2"},
		},
		{
			name: "ServeMux, rest wildcard and host", route: "docs", path: "http://example.com/docs/a/b",
			mount: onMux("example.com/docs/{path...}"), want: map[string]string{"path": "a/b"},
		},
		{
			name: "ServeMux, no wildcard", route: "about", path: "/about",
			mount: onMux("GET /about"), want: nil,
		},
		{
			name: "ServeMux, end of path", route: "home", path: "/",
			mount: onMux("GET /{$}"), want: nil,
		},
		{
			name: "router that sets path values only, route names them", route: "/products/{id}", path: "/products/7",
			mount: settingValues("", "id", "7"), want: map[string]string{"id": "7"},
		},
		{
			name: "router that sets path values only, route names none", route: "product", path: "/products/7",
			mount: settingValues("", "id", "7"), want: nil,
		},
		{
			// chi 5.2 sets r.Pattern to its own syntax; its path value is named without the regexp.
			name: "chi pattern with a regexp", route: "product", path: "/products/7",
			mount: settingValues("/products/{id:[0-9]+}", "id", "7"), want: map[string]string{"id": "7"},
		},
		{
			// A ServeMux hands "/shop/" to a router that sets the values: the outer pattern
			// names none, the configured route still does.
			name: "nested router", route: "/shop/{id}", path: "/shop/7",
			mount: func(h http.Handler) http.Handler { return onMux("/shop/")(settingValues("", "id", "7")(h)) },
			want:  map[string]string{"id": "7"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPage(Route{Pattern: tt.route, Page: "p"}, &Options{}, deps{})
			var got map[string]string
			ran := false
			page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got, ran = p.request(r).Params, true })
			tt.mount(page).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", tt.path, nil))
			if !ran {
				t.Fatalf("the router did not reach the page for %s", tt.path)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("got params %v, want %v", got, tt.want)
			}
		})
	}
}

func onMux(pattern string) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		mux := http.NewServeMux()
		mux.Handle(pattern, h)
		return mux
	}
}

// settingValues stands in for a router other than ServeMux: it sets a path value, and
// r.Pattern only if pattern is not empty.
func settingValues(pattern, name, value string) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if pattern != "" {
				r.Pattern = pattern
			}
			r.SetPathValue(name, value)
			h.ServeHTTP(w, r)
		})
	}
}
