package ssr

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
)

// TestCacheStatusIsAStructuredField: every Cache-Status the edge sends parses as an RFC 9211
// list (RFC 8941 structured field) whose members carry each parameter once, and a fallback's
// detail is its reason.
func TestCacheStatusIsAStructuredField(t *testing.T) {
	failing := func(*http.Request) (Result, error) { return Result{}, errors.New("db down") }
	tests := []struct {
		name       string
		options    PageOptions
		down       bool
		wantDetail string
	}{
		{"uncacheable route whose loader failed", PageOptions{Load: failing}, false, "load-error"},
		{"cached route whose loader failed", PageOptions{Load: failing, Cache: CachePolicy{TTL: time.Minute, Query: []string{}}}, false, "load-error"},
		{"uncacheable route, renderer down", PageOptions{}, true, "render-error"},
		{"uncacheable route rendered", PageOptions{}, false, "uncacheable-route"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			f.renderer.down.Store(tt.down)
			rec := serve(f.srv.Page("product", tt.options), "/products/7")
			field := rec.Header().Values("Cache-Status")
			list, err := httpsfv.UnmarshalList(field)
			if err != nil || len(list) != 1 {
				t.Fatalf("Cache-Status %q: got %v, %d members, want one list member", field, err, len(list))
			}
			params := list[0].(httpsfv.Item).Params
			seen := map[string]int{}
			for _, name := range params.Names() {
				seen[name]++
			}
			for name, n := range seen {
				if n > 1 {
					t.Errorf("Cache-Status %q: parameter %s %d times", field, name, n)
				}
			}
			// A parser keeps the last value of a repeated key: check the raw field too.
			if n := strings.Count(field[0], "detail="); n != 1 {
				t.Errorf("Cache-Status %q: %d detail parameters, want 1", field, n)
			}
			if got, _ := params.Get("detail"); got != httpsfv.Token(tt.wantDetail) {
				t.Errorf("Cache-Status %q: got detail %v, want %s", field, got, tt.wantDetail)
			}
		})
	}
}
