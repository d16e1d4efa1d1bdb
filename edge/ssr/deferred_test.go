package ssr

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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

// TestFallbackCarriesDeferredValues: with the renderer down, the client-side-render
// document of a page with a deferred value sends its head and empty root at once, and its
// end, with the value Go computed, once the value is in: the browser renders the page with
// it, not the boundary's error UI. A value that fails is carried as its error.
func TestFallbackCarriesDeferredValues(t *testing.T) {
	// Far beyond a loaded runner's: the test is about order.
	f := newFixture(t, Options{Timeouts: Timeouts{Render: 10 * time.Second, Stream: 15 * time.Second, Hard: 20 * time.Second}})
	f.renderer.down.Store(true)
	gate := make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle("GET /books/{id}", f.srv.Page("book", PageOptions{Stream: true, Load: func(*http.Request) (Result, error) {
		return Result{Props: map[string]int{"id": 1}, Head: "<title>The Book</title>", Deferred: map[string]Deferred{
			"reviews": func(ctx context.Context) (any, error) {
				select {
				case <-gate:
					return []string{"great"}, nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			},
			"stock": func(context.Context) (any, error) { return nil, errors.New("the stock service is down") },
		}}, nil
	}}))
	ts := httptest.NewServer(f.srv.Wrap(mux))
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/books/1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("X-Ssr-Fallback") == "" {
		t.Fatalf("X-SSR-Fallback empty: want the client-side-render document")
	}
	// The value's function waits for the gate, opened only once the head has been read.
	var head strings.Builder
	buf := make([]byte, 4096)
	for !strings.Contains(head.String(), `<div id="root">`) {
		n, err := resp.Body.Read(buf)
		head.Write(buf[:n])
		if err != nil && !strings.Contains(head.String(), `<div id="root">`) {
			t.Fatalf("the body ended (%v) before its root:\n%s", err, head.String())
		}
	}
	if !strings.Contains(head.String(), "<title>The Book</title>") {
		t.Errorf("the fallback's head lacks the loader's title:\n%s", head.String())
	}
	close(gate)
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<script type="application/json" data-ssr-deferred="reviews">{"value":["great"]}</script>`,
		`<script type="application/json" data-ssr-deferred="stock">{"error":"deferred value \"stock\" failed"}</script>`,
	} {
		if !strings.Contains(string(rest), want) {
			t.Errorf("the document's end lacks %s:\n%s", want, rest)
		}
	}
}
