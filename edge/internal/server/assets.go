package server

import (
	"net/http"
	"os"
	"strings"
)

// assets serves the client build's hashed files. Names are content hashes, so they never
// change: browsers and CDNs may keep them for a year. With a shared cache, a file this
// build lacks comes from the store's copies of earlier builds (storedassets.go).
type assets struct {
	// dir is opened again for each request, through an os.Root that confines the open to it,
	// symlinks included: a client build removes the directory and writes a new one, and a
	// Root held from the start would go on reading the deleted one while the document links
	// the new build's files. It costs one more open per file, which CDNs keep for a year.
	dir    string
	shared *sharedTier
}

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

func (a *assets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Every answer, 404s included: a browser never guesses a type other than the one given.
	w.Header().Set("X-Content-Type-Options", "nosniff")
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
