package document

// The client builds a Shell links: the manifest (its file followed as a rebuild replaces
// it), and the recent builds by id, for the pages whose server bundle names one.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Manifest is the client build's manifest.json (docs/app-contract.md).
type Manifest struct {
	BuildID string   `json:"buildId"`
	Scripts []string `json:"scripts"`
	Styles  []string `json:"styles"`

	path string // the file LoadManifest read; empty for a Manifest made in code
}

// LoadManifest reads <assetsDir>/manifest.json.
func LoadManifest(assetsDir string) (*Manifest, error) {
	path := filepath.Join(assetsDir, "manifest.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("client build manifest: %w (build the app first: make build)", err)
	}
	return parseManifest(path, data)
}

func parseManifest(path string, data []byte) (*Manifest, error) {
	m := &Manifest{path: path}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("client build manifest %s: %w", path, err)
	}
	if len(m.Scripts) == 0 {
		return nil, errors.New("client build manifest " + path + ": no scripts")
	}
	return m, nil
}

// manifestCheckInterval is how often a Shell looks at its manifest's file, at most.
const manifestCheckInterval = time.Second

// Shell assembles documents for a client build. A Shell made from LoadManifest's Manifest
// follows that file: once a new build has replaced it (make dev), documents link the new
// build's files within about manifestCheckInterval. It is safe for concurrent use.
type Shell struct {
	build atomic.Pointer[build]
	// recent are the builds the manifest has named, the current one among them, by id: a
	// page names the client build its server bundle was built with, which may be the one
	// before (a renderer not yet reloaded) or, briefly, one the file has not been read for.
	recent sync.Map // id → *build
	order  []string // guarded by mu: recent's ids, oldest first

	path             string       // the manifest's file; empty: the build never changes
	nextCheck        atomic.Int64 // UnixNano before which the file is not read again
	nextUnknownCheck atomic.Int64 // the same, for a page naming a build not known (buildFor)

	mu   sync.Mutex // held while the file is read
	last []byte     // guarded by mu: the file as it was when assets was last set from it
}

// NewShell prepares the parts of the document that do not change between pages.
func NewShell(m *Manifest) *Shell {
	s := &Shell{path: m.path}
	s.nextCheck.Store(time.Now().Add(manifestCheckInterval).UnixNano())
	s.setBuild(m)
	return s
}

// build is what a Shell takes from one manifest.
type build struct {
	id string
	// files are its scripts' and styles' paths under the assets directory, to see that they
	// are still there (present); empty: not known (no manifest file).
	files   []string
	checked atomic.Int64 // UnixNano of present's last look
	there   atomic.Bool
	// styles are the stylesheet tags; scripts the scripts' src values, escaped.
	styles  string
	scripts []string
	// preload is the Link header that preloads the scripts (module scripts, as the document
	// loads them) and styles.
	preload string
}

// BuildID is the build's id: the HTML cache keys on it, so a new build starts cold.
func (s *Shell) BuildID() string {
	s.checkManifest()
	return s.build.Load().id
}

// Preload is the Link header of a 103 Early Hints for the build's scripts and styles.
func (s *Shell) Preload() string { return s.build.Load().preload }

func (s *Shell) setBuild(m *Manifest) {
	var links []string
	for _, src := range m.Scripts {
		links = append(links, "<"+src+">; rel=modulepreload")
	}
	for _, href := range m.Styles {
		links = append(links, "<"+href+">; rel=preload; as=style")
	}
	var styles strings.Builder
	for _, href := range m.Styles {
		fmt.Fprintf(&styles, "<link rel=\"stylesheet\" href=\"%s\">\n", html.EscapeString(href))
	}
	scripts := make([]string, len(m.Scripts))
	for i, src := range m.Scripts {
		scripts[i] = html.EscapeString(src)
	}
	b := &build{id: m.BuildID, styles: styles.String(), scripts: scripts, preload: strings.Join(links, ", ")}
	if s.path != "" {
		for _, url := range append(slices.Clone(m.Scripts), m.Styles...) {
			b.files = append(b.files, filepath.Join(filepath.Dir(s.path), filepath.FromSlash(strings.TrimPrefix(url, "/"))))
		}
	}
	s.build.Store(b)
	if _, known := s.recent.Swap(b.id, b); !known {
		s.order = append(s.order, b.id)
		if len(s.order) > recentBuilds {
			s.recent.Delete(s.order[0])
			s.order = s.order[1:]
		}
	}
}

// recentBuilds is how many client builds a Shell links by id: a build's files stay in
// assets_dir (sidecar-ssr-build leaves the older ones), and a renderer reloads within
// seconds of its build.
const recentBuilds = 8

// buildFor is the client build id names, when the Shell knows it (id empty: the current
// one); ok false when it does not, even once the manifest's file is read again now: the
// current one then.
func (s *Shell) buildFor(id string) (b *build, ok bool) {
	cur := s.build.Load()
	if id == "" || id == cur.id {
		return cur, true
	}
	if known, found := s.recent.Load(id); found {
		// An older build whose files a rebuild removed cannot be linked: the current one is.
		if b := known.(*build); b == s.build.Load() || b.present() {
			return b, true
		}
		return s.build.Load(), false
	}
	// A renderer already on a build whose manifest has not been read yet: read now, at
	// most once in unknownCheckInterval (an id no manifest names would read it for every
	// page).
	now := time.Now().UnixNano()
	if next := s.nextUnknownCheck.Load(); now >= next && s.nextUnknownCheck.CompareAndSwap(next, now+int64(unknownCheckInterval)) {
		s.rereadManifest()
		if known, found := s.recent.Load(id); found {
			return known.(*build), true
		}
	}
	return s.build.Load(), false
}

// present reports whether b's files are still in the assets directory, looked at once in
// manifestCheckInterval at most.
func (b *build) present() bool {
	now := time.Now().UnixNano()
	if last := b.checked.Load(); now-last >= int64(manifestCheckInterval) && b.checked.CompareAndSwap(last, now) {
		there := true
		for _, f := range b.files {
			if _, err := os.Stat(f); err != nil {
				there = false
				break
			}
		}
		b.there.Store(there)
	}
	return b.there.Load()
}

// unknownCheckInterval spaces the reads of the manifest for client builds it did not name.
const unknownCheckInterval = 100 * time.Millisecond

// Links reports whether a page naming client build id links that build (an id the Shell
// does not know links the current build instead).
func (s *Shell) Links(id string) bool {
	_, ok := s.buildFor(id)
	return ok
}

// checkManifest has the manifest's file read in the background when a check is due: the
// request that finds it due does not wait for the disk.
func (s *Shell) checkManifest() {
	if s.path == "" {
		return
	}
	now := time.Now().UnixNano()
	next := s.nextCheck.Load()
	if now < next || !s.nextCheck.CompareAndSwap(next, now+int64(manifestCheckInterval)) {
		return
	}
	go s.rereadManifest()
}

// rereadManifest takes the file's build when its bytes changed. A file that cannot be read
// or parsed leaves the build as it was, and is read again at the next check.
func (s *Shell) rereadManifest() {
	if !s.mu.TryLock() {
		return
	}
	defer s.mu.Unlock()
	data, err := os.ReadFile(s.path)
	if err != nil || bytes.Equal(data, s.last) {
		return
	}
	m, err := parseManifest(s.path, data)
	if err != nil {
		return
	}
	s.setBuild(m)
	s.last = data
}
