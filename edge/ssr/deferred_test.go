package ssr

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDeferredValuesAsJSON(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value any
		err   error
		want  string
		fails string
	}{
		{"a struct", struct {
			A int `json:"a"`
		}{1}, nil, `{"a":1}`, ""},
		{"a string", "x", nil, `"x"`, ""},
		{"nil", nil, nil, `null`, ""},
		{"a raw message", json.RawMessage(`[1,2]`), nil, `[1,2]`, ""},
		{"a raw message that is not JSON", json.RawMessage(`[1,`), nil, "", "not valid JSON"},
		{"not JSON", func() {}, nil, "", "the value is not JSON"},
		{"the function's error", nil, errors.New("down"), "", "down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			funcs := deferredJSON(map[string]Deferred{"v": func(context.Context) (any, error) { return tc.value, tc.err }})
			got, err := funcs["v"](context.Background())
			if tc.fails != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fails) {
					t.Errorf("got %s, %v; want an error with %q", got, err, tc.fails)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("got %s, %v; want %s", got, err, tc.want)
			}
		})
	}
	if deferredJSON(nil) != nil {
		t.Error("no deferred values: want nil")
	}
}

// TestDefer: a typed value and its function's error reach the page as a plain Deferred's do.
func TestDefer(t *testing.T) {
	type review struct {
		Stars int `json:"stars"`
	}
	down := errors.New("down")
	for _, tc := range []struct {
		name    string
		fn      Deferred
		want    string
		wantErr error
	}{
		{name: "a value", fn: Defer(func(context.Context) ([]review, error) { return []review{{5}}, nil }), want: `[{"stars":5}]`},
		{name: "a raw message", fn: Defer(func(context.Context) (json.RawMessage, error) { return json.RawMessage(`[1]`), nil }), want: `[1]`},
		{name: "an error", fn: Defer(func(context.Context) (*review, error) { return nil, down }), wantErr: down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := deferredJSON(map[string]Deferred{"v": tc.fn})["v"](context.Background())
			if !errors.Is(err, tc.wantErr) || string(got) != tc.want {
				t.Errorf("got %s, %v; want %s, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestDeferNil: Defer(nil) is a nil Deferred, which the edge names rather than panicking
// when the render calls it.
func TestDeferNil(t *testing.T) {
	if Defer[int](nil) != nil {
		t.Error("got a function, want nil")
	}
}
