package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readSharedCases decodes a case file both sides run (proto/testdata) into file.
func readSharedCases(t *testing.T, name string, file any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "proto", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, file); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// TestDecideAsTheRendererDoes runs the renderer's cases (renderer/test/decision.test.js runs
// them against its decide()).
func TestDecideAsTheRendererDoes(t *testing.T) {
	var file struct {
		Cases []struct {
			Name   string
			JSOnly bool
			Load   struct {
				Redirect *struct {
					Location string
					Status   int
				}
				NotFound bool
				Status   float64 // a jsOnly case's is not an integer
			}
			Want struct {
				NotFound bool
				Redirect string
				Status   int
				Error    string
			}
		}
	}
	readSharedCases(t, "page-decisions.json", &file)
	for _, c := range file.Cases {
		if c.JSOnly {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			l := &Result{NotFound: c.Load.NotFound, Status: int(c.Load.Status)}
			if c.Load.Redirect != nil {
				l.Redirect, l.RedirectStatus = c.Load.Redirect.Location, c.Load.Redirect.Status
			}
			got, err := decide(l)
			if c.Want.Error != "" {
				if err == nil || !strings.Contains(err.Error(), c.Want.Error) {
					t.Fatalf("got %+v, %v; want an error saying %q", got, err, c.Want.Error)
				}
				return
			}
			want := decision{redirect: c.Want.Redirect, notFound: c.Want.NotFound, status: c.Want.Status}
			if err != nil || got != want {
				t.Fatalf("got %+v, %v; want %+v", got, err, want)
			}
		})
	}
}
