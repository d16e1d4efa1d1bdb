package ssr

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"
)

type typedProps struct {
	Name string `json:"name"`
}

func TestTyped(t *testing.T) {
	failed := errors.New("database down")
	for _, tc := range []struct {
		name    string
		props   typedProps
		res     Result
		err     error
		want    Result
		wantErr error
	}{
		{name: "props", props: typedProps{"lamp"}, want: Result{Props: typedProps{"lamp"}}},
		{name: "props and decision", props: typedProps{"lamp"}, res: Result{Status: 410, MaxAge: time.Minute, Tags: []string{"product:1"}},
			want: Result{Props: typedProps{"lamp"}, Status: 410, MaxAge: time.Minute, Tags: []string{"product:1"}}},
		{name: "not found drops the props", props: typedProps{"lamp"}, res: Result{NotFound: true}, want: Result{NotFound: true}},
		{name: "redirect drops the props", props: typedProps{"lamp"}, res: Result{Redirect: "/products/2"}, want: Result{Redirect: "/products/2"}},
		{name: "error", props: typedProps{"lamp"}, err: failed, wantErr: failed},
		{name: "props set twice", props: typedProps{"lamp"}, res: Result{Props: map[string]string{"name": "chair"}}, wantErr: errTypedProps},
	} {
		t.Run(tc.name, func(t *testing.T) {
			load := Typed(func(*http.Request) (typedProps, Result, error) { return tc.props, tc.res, tc.err })
			got, err := load(httptest.NewRequest("GET", "/", nil))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got error %v, want %v", err, tc.wantErr)
			}
			if err == nil && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestTypedPropsReachThePage: a typed loader's props are marshalled like any loader's.
func TestTypedPropsReachThePage(t *testing.T) {
	res, err := Typed(func(*http.Request) (typedProps, Result, error) {
		return typedProps{"lamp"}, Result{}, nil
	})(httptest.NewRequest("GET", "/", nil))
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := res.marshalled()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(loaded.Props), `{"name":"lamp"}`; got != want {
		t.Errorf("got props %s, want %s", got, want)
	}
}
