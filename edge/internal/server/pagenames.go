package server

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
)

// PageLister names the pages of the renderer's bundle and the bundle's id;
// *renderclient.Client is the real one.
type PageLister interface {
	ListPages(ctx context.Context) (pages []string, bundleID string, err error)
}

// pageNames holds the page names the Go side uses against the renderer's bundle, so that a
// typo is found at start, not answered on every request.
type pageNames struct {
	log *slog.Logger

	mu sync.Mutex
	// used maps each page name in use to where it is used (a route, Render, not-found).
	used map[string]string // guarded by mu
	// bundle is the renderer's page names; nil until it answered.
	bundle map[string]bool // guarded by mu
	// reported are the missing names already logged.
	reported map[string]bool // guarded by mu
	// absent are names a render was refused for since bundle was learned (NOT_FOUND): the
	// renderer may have moved to another bundle since.
	absent map[string]bool // guarded by mu
}

func newPageNames(log *slog.Logger) *pageNames {
	return &pageNames{log: log, used: map[string]string{}, reported: map[string]bool{}, absent: map[string]bool{}}
}

// use records that where uses page; a name the bundle is known to lack is logged at once.
func (n *pageNames) use(page, where string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.used[page]; !ok {
		n.used[page] = where
	}
	n.reportLocked()
}

// learn takes the bundle's page names and logs each name in use that it lacks.
func (n *pageNames) learn(pages []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.bundle = map[string]bool{}
	for _, p := range pages {
		n.bundle[p] = true
	}
	n.reported = map[string]bool{}
	n.absent = map[string]bool{}
	n.reportLocked()
}

// refused records that the renderer answered a render of page with NOT_FOUND.
func (n *pageNames) refused(page string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.absent[page] = true
}

func (n *pageNames) reportLocked() {
	if n.bundle == nil {
		return
	}
	for page, where := range n.used {
		if !n.bundle[page] && !n.reported[page] {
			n.reported[page] = true
			n.log.Error("the renderer's bundle has no such page: its requests answer 500", "page", page, "used_by", where)
		}
	}
}

// missing returns an error naming every page in use that the bundle lacks, or nil (also
// while the bundle is not known).
func (n *pageNames) missing() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var lines []string
	for page, where := range n.used {
		if n.absent[page] || n.bundle != nil && !n.bundle[page] {
			lines = append(lines, fmt.Sprintf("%q (%s)", page, where))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	slices.Sort(lines)
	err := fmt.Errorf("the renderer's bundle has no page %s", strings.Join(lines, ", "))
	if n.bundle != nil {
		err = fmt.Errorf("%w; it has %s", err, strings.Join(slices.Sorted(maps.Keys(n.bundle)), ", "))
	}
	return err
}
