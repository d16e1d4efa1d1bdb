package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/propstypes"
)

const pages = "../../internal/propstypes/testdata/pages"

func TestRun(t *testing.T) {
	dir := t.TempDir()
	ts, schema := filepath.Join(dir, "props.gen.d.ts"), filepath.Join(dir, "props.gen.schema.json")
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "both files", args: []string{"-ts", ts, "-schema", schema, pages}},
		{name: "no -ts", args: []string{"-schema", schema, pages}, wantErr: "-ts: which file to write?"},
		{name: "no typed page", args: []string{"-ts", ts, "."}, wantErr: "[.] registers no page with ssr.Typed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, file := range []string{ts, schema} {
				if b, err := os.ReadFile(file); err != nil || !strings.Contains(string(b), propstypes.Header) {
					t.Errorf("%s: %v, does not say %q", file, err, propstypes.Header)
				}
			}
		})
	}
}

// TestRunKeepsAnUnchangedFile: the app's build and make see no change when there is none.
func TestRunKeepsAnUnchangedFile(t *testing.T) {
	ts := filepath.Join(t.TempDir(), "props.gen.d.ts")
	if err := run([]string{"-ts", ts, pages}); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(ts, old, old); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-ts", ts, pages}); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(ts); err != nil || !info.ModTime().Equal(old) {
		t.Errorf("the file was written again (%v)", err)
	}
}
