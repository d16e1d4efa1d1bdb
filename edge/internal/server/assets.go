package server

import (
	"net/http"
	"os"
	"strings"
)

// assets serves the client build's hashed files. Names are content hashes, so they never
// change: browsers and CDNs may keep them for a year.
type assets struct {
	root *os.Root // confines every open to the directory, symlinks included
}

func newAssets(dir string) (*assets, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &assets{root: root}, nil
}

func (a *assets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/assets/")
	f, err := a.root.Open(name)
	if err != nil {
		http.NotFound(w, r)
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
