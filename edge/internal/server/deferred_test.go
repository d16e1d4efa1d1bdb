package server

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestCheckDeferred(t *testing.T) {
	ok := func(context.Context) ([]byte, error) { return []byte("1"), nil }
	for _, tc := range []struct {
		name  string
		funcs map[string]DeferredFunc
		err   string
	}{
		{"none", nil, ""},
		{"names a page can read", map[string]DeferredFunc{"reviews": ok, "stock_2": ok, "a-b": ok, strings.Repeat("x", 64): ok}, ""},
		{"empty name", map[string]DeferredFunc{"": ok}, `deferred value "": a name is 1 to 64`},
		{"too long", map[string]DeferredFunc{strings.Repeat("x", 65): ok}, "a name is 1 to 64"},
		{"an attribute breaker", map[string]DeferredFunc{`a"b`: ok}, `deferred value "a\"b"`},
		{"a dot", map[string]DeferredFunc{"a.b": ok}, "a name is 1 to 64"},
		{"no function", map[string]DeferredFunc{"reviews": nil}, `deferred value "reviews" has no function`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkDeferred(tc.funcs)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("got %v, want %q", err, tc.err)
			}
		})
	}
}

func TestDeferredMargin(t *testing.T) {
	for hard, want := range map[time.Duration]time.Duration{
		2 * time.Second: 100 * time.Millisecond, 500 * time.Millisecond: 50 * time.Millisecond, time.Minute: 100 * time.Millisecond,
	} {
		if got := deferredMargin(hard); got != want {
			t.Errorf("deferredMargin(%v) = %v, want %v", hard, got, want)
		}
	}
}
