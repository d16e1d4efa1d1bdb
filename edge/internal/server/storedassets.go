package server

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"regexp"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache"
)

// The store's copies of the client builds: every edge puts its build's files in the shared
// cache's store when it starts (publish), and serves from there a file its own build lacks
// (serveFromStore), so that during a rollout a page of build N loads build N's files from
// an edge of build N+1. Only names and types a client build gives its files cross.

// previousBuildsTTL is how long a build's files stay in the store after its last edge
// started: a browser tab can hold a page of build N for days.
const previousBuildsTTL = 7 * 24 * time.Hour

// publish puts every file of this build (the one in root) in the store, for the edges of
// the next builds, and closes root.
func (a *assets) publish(root *os.Root) {
	defer root.Close()
	files := root.FS()
	err := fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if _, ok := storedAssetType(name); !ok {
			return nil // no edge would serve it from the store
		}
		body, err := fs.ReadFile(files, name)
		if err == nil {
			began := time.Now()
			err = a.shared.store.PutAsset(context.Background(), name, body, previousBuildsTTL)
			a.shared.observe("put-asset", began, err, "ok")
		}
		return err
	})
	if err != nil {
		a.shared.log.Error("shared cache: this build's files are not in the store: pages of this build will miss them on edges of later builds", "err", err)
	}
}

// serveFromStore answers with a previous build's file, or 404. Only a name the client build
// gives its files (storedAssetType) is looked up: whatever else the store holds is never
// served, whoever wrote it.
func (a *assets) serveFromStore(w http.ResponseWriter, r *http.Request, name string) {
	ctype, ok := storedAssetType(name)
	if a.shared == nil || !ok {
		http.NotFound(w, r)
		return
	}
	began := time.Now()
	body, err := a.shared.store.Asset(r.Context(), name)
	result := either(body != nil, "hit", "miss")
	if errors.Is(err, sharedcache.ErrInvalid) {
		err, result = nil, "invalid"
	}
	a.shared.observe("get-asset", began, err, result)
	if body == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(body))
}

// hashedName is how the client build names its files (esbuild's entryNames and assetNames,
// "[name]-[hash]"): a name, a dash, a hash of at least 8 letters and digits, an extension,
// and ".map" for a source map. No directory.
var hashedName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*-[A-Za-z0-9]{8,}(\.[a-z0-9]+)(\.map)?$`)

// storedAssetTypes are the types of the client build's files an edge serves from the store,
// by extension: scripts, styles, source maps, fonts and images. Not HTML, nor SVG (a
// document that runs scripts when opened on its own).
var storedAssetTypes = map[string]string{
	".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8", ".map": "application/json",
	".woff2": "font/woff2", ".woff": "font/woff", ".ttf": "font/ttf", ".otf": "font/otf",
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
	".webp": "image/webp", ".avif": "image/avif", ".ico": "image/x-icon", ".wasm": "application/wasm",
}

// storedAssetType returns the Content-Type of a file the store may serve under name, and
// whether it may serve one at all: a hashed name with a known type.
func storedAssetType(name string) (string, bool) {
	m := hashedName.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	ext := m[1]
	if m[2] != "" {
		if _, ok := storedAssetTypes[ext]; !ok || ext == ".map" {
			return "", false // a source map of a type not served
		}
		ext = m[2]
	}
	ctype, ok := storedAssetTypes[ext]
	return ctype, ok
}
