package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache/redistest"
)

// writeAssets makes dir hold one file per name, each containing its own name.
func writeAssets(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, name := range names {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// getAsset asks a for name as it is, past any router's path cleaning.
func getAsset(a http.Handler, name string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/assets/x", nil)
	r.URL.Path = "/assets/" + name
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, r)
	return rec
}

// TestAssetsAfterRebuild: a client build removes its directory and writes a new one while
// the edge runs; the document links the new build's files at once, so they must be served.
func TestAssetsAfterRebuild(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "assets")
	writeAssets(t, dir, "client-1.js")
	a, err := newAssets(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec := getAsset(a, "client-1.js"); rec.Code != 200 {
		t.Fatalf("before the rebuild: got %d, want 200", rec.Code)
	}

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if rec := getAsset(a, "client-1.js"); rec.Code != 404 {
		t.Errorf("while the directory is gone: got %d, want 404", rec.Code)
	}
	writeAssets(t, dir, "client-2.js")

	tests := []struct {
		name string
		want int
	}{
		{"client-2.js", 200},
		{"client-1.js", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := getAsset(a, tt.name)
			if rec.Code != tt.want {
				t.Fatalf("after the rebuild: got %d, want %d", rec.Code, tt.want)
			}
			if tt.want == 200 && rec.Body.String() != tt.name {
				t.Errorf("got body %q, want %q", rec.Body.String(), tt.name)
			}
		})
	}
}

// TestAssetsStayInTheDirectory: no name, link or rebuild reaches a file outside the
// assets directory (the manifest beside it, or anything else on the host).
func TestAssetsStayInTheDirectory(t *testing.T) {
	client := t.TempDir()
	dir := filepath.Join(client, "assets")
	secret := filepath.Join(client, "manifest.json")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := func() {
		writeAssets(t, dir, "client-1.js", "sub/chunk-1.js")
		for link, target := range map[string]string{
			"relative-escape.js": "../manifest.json",
			"absolute-escape.js": secret,
			"inside.js":          "sub/chunk-1.js",
		} {
			if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
				t.Fatal(err)
			}
		}
	}
	build()
	a, err := newAssets(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want int
	}{
		{"client-1.js", 200},
		{"sub/chunk-1.js", 200},
		{"inside.js", 200},
		{"sub", 404},
		{"", 404},
		{"../manifest.json", 404},
		{"sub/../../manifest.json", 404},
		{secret, 404},
		{"/" + secret, 404},
		{"relative-escape.js", 404},
		{"absolute-escape.js", 404},
	}
	for _, stage := range []string{"first build", "rebuilt"} {
		if stage == "rebuilt" {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			build()
		}
		for _, tt := range tests {
			t.Run(stage+"/"+tt.name, func(t *testing.T) {
				rec := getAsset(a, tt.name)
				if rec.Code != tt.want {
					t.Errorf("got %d, want %d", rec.Code, tt.want)
				}
				if strings.Contains(rec.Body.String(), "secret") {
					t.Errorf("served %q, a file outside the assets directory", rec.Body.String())
				}
			})
		}
	}
}

func TestAssetsDirectoryMustExist(t *testing.T) {
	if _, err := newAssets(filepath.Join(t.TempDir(), "missing"), nil); err == nil {
		t.Errorf("got no error for a missing assets directory, want one at start")
	}
}

// TestAssetsOfTheBuildBeforeARebuild: the files of the build the edge started with stay
// available from the shared store once a rebuild has replaced them on disk, for the pages
// of that build still open in browsers.
func TestAssetsOfTheBuildBeforeARebuild(t *testing.T) {
	store, err := sharedcache.New(sharedcache.Options{Address: redistest.Start(t), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	shared := &sharedTier{store: store, metrics: NewMetrics(prometheus.NewRegistry()), log: slog.New(slog.DiscardHandler)}
	dir := filepath.Join(t.TempDir(), "assets")
	writeAssets(t, dir, "client-AAAAAAA1.js")
	a, err := newAssets(dir, shared)
	if err != nil {
		t.Fatal(err)
	}
	// newAssets publishes in the background.
	poll.Until(t, "client-AAAAAAA1.js published to the store", func() bool {
		body, _ := store.Asset(context.Background(), "client-AAAAAAA1.js")
		return body != nil
	})
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	writeAssets(t, dir, "client-AAAAAAA2.js")
	for _, name := range []string{"client-AAAAAAA1.js", "client-AAAAAAA2.js"} {
		if rec := getAsset(a, name); rec.Code != 200 || rec.Body.String() != name {
			t.Errorf("%s after the rebuild: got %d %q, want 200 %q", name, rec.Code, rec.Body.String(), name)
		}
	}
}
