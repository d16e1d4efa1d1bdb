package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/renderclient"
)

// PageLister tells what the renderer's bundle exports; *renderclient.Client is the real one.
type PageLister interface {
	ListPages(ctx context.Context) (renderclient.Bundle, error)
}

// pageNames holds the page names the Go side uses against the renderer's bundle, so that a
// typo, or a page that streams from a bundle that cannot, is found at start, not answered
// on every request.
type pageNames struct {
	log *slog.Logger

	mu sync.Mutex
	// used maps each page name in use to where it is used (a route, Render, not-found).
	used map[string]string // guarded by mu
	// streamed maps each page name a streaming route uses to that route.
	streamed map[string]string // guarded by mu
	// bundle is the renderer's page names; nil until it answered.
	bundle map[string]bool // guarded by mu
	// canStream: the bundle exports renderToPipeableStream.
	canStream bool // guarded by mu
	// reported are the problems already logged.
	reported map[string]bool // guarded by mu
	// absent are names a render was refused for since bundle was learned (NOT_FOUND): the
	// renderer may have moved to another bundle since.
	absent map[string]bool // guarded by mu
}

func newPageNames(log *slog.Logger) *pageNames {
	return &pageNames{log: log, used: map[string]string{}, streamed: map[string]string{}, reported: map[string]bool{}, absent: map[string]bool{}}
}

// use records that where uses page (streamed: to stream it); a problem the bundle is known
// to have with it is logged at once.
func (n *pageNames) use(page, where string, streamed bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, known := n.used[page]
	_, knownStreamed := n.streamed[page]
	if known && (knownStreamed || !streamed) {
		return // nothing new to report: a name used on every request costs a lookup
	}
	if !known {
		n.used[page] = where
	}
	if streamed && !knownStreamed {
		n.streamed[page] = where
	}
	n.reportLocked()
}

// learn takes what the bundle exports and logs each problem it has with the names in use.
func (n *pageNames) learn(b renderclient.Bundle) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.bundle = map[string]bool{}
	for _, p := range b.Pages {
		n.bundle[p] = true
	}
	for _, i := range b.Islands {
		n.bundle[islandPage(i)] = true
	}
	n.canStream = b.CanStream
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
	for page, where := range n.streamed {
		if !n.canStream && !n.reported["stream "+page] {
			n.reported["stream "+page] = true
			n.log.Error("the page streams, but the renderer's bundle does not export renderToPipeableStream: its requests answer the client-side shell",
				"page", page, "used_by", where)
		}
	}
}

// missing returns an error naming every page in use that the bundle lacks, and every page
// that streams while the bundle cannot, or nil (also while the bundle is not known).
func (n *pageNames) missing() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var absent, unstreamable []string
	for page, where := range n.used {
		if n.absent[page] || n.bundle != nil && !n.bundle[page] {
			absent = append(absent, fmt.Sprintf("%q (%s)", page, where))
		}
	}
	if n.bundle != nil && !n.canStream {
		for page, where := range n.streamed {
			unstreamable = append(unstreamable, fmt.Sprintf("%q (%s)", page, where))
		}
	}
	var errs []error
	if len(absent) > 0 {
		slices.Sort(absent)
		err := fmt.Errorf("the renderer's bundle has no page %s", strings.Join(absent, ", "))
		if n.bundle != nil {
			err = fmt.Errorf("%w; it has %s", err, strings.Join(slices.Sorted(maps.Keys(n.bundle)), ", "))
		}
		errs = append(errs, err)
	}
	if len(unstreamable) > 0 {
		slices.Sort(unstreamable)
		errs = append(errs, fmt.Errorf("page %s streams, but the renderer's bundle does not export renderToPipeableStream "+
			"(sidecar-ssr-build's bundle does; a bundle built otherwise must export it from react-dom/server)", strings.Join(unstreamable, ", ")))
	}
	return errors.Join(errs...)
}
