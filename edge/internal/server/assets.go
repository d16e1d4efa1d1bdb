package server

import (
	"bytes"
	"context"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"strings"
	"time"
)

// assets serves the client build's hashed files. Names are content hashes, so they never
// change: browsers and CDNs may keep them for a year. With a shared cache, a file this
// build lacks comes from the store, where every edge puts its build's files when it starts:
// during a rollout, a page of build N loads build N's files from an edge of build N+1.
type assets struct {
	// dir is opened again for each request, through an os.Root that confines the open to it,
	// symlinks included: a client build removes the directory and writes a new one, and a
	// Root held from the start would go on reading the deleted one while the document links
	// the new build's files. It costs one more open per file, which CDNs keep for a year.
	dir    string
	shared *sharedTier
}

// previousBuildsTTL is how long a build's files stay in the store after its last edge
// started: a browser tab can hold a page of build N for days.
const previousBuildsTTL = 7 * 24 * time.Hour

func newAssets(dir string, shared *sharedTier) (*assets, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	a := &assets{dir: dir, shared: shared}
	if shared == nil {
		root.Close()
		return a, nil
	}
	go a.publish(root)
	return a, nil
}

// publish puts every file of this build (the one in root) in the store, for the edges of
// the next builds, and closes root.
func (a *assets) publish(root *os.Root) {
	defer root.Close()
	files := root.FS()
	err := fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
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

func (a *assets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/assets/")
	f, err := os.OpenInRoot(a.dir, name)
	if err != nil {
		a.serveFromStore(w, r, name)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.IsDir() {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	http.ServeContent(w, r, name, info.ModTime(), f)
}

// serveFromStore answers with a previous build's file, or 404.
func (a *assets) serveFromStore(w http.ResponseWriter, r *http.Request, name string) {
	var body []byte
	if a.shared != nil && fs.ValidPath(name) {
		began := time.Now()
		var err error
		body, err = a.shared.store.Asset(r.Context(), name)
		a.shared.observe("get-asset", began, err, either(body != nil, "hit", "miss"))
	}
	if body == nil {
		http.NotFound(w, r)
		return
	}
	if ctype := mime.TypeByExtension(path.Ext(name)); ctype != "" {
		w.Header().Set("Content-Type", ctype)
	}
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(body))
}
