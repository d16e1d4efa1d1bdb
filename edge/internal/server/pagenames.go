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
// typo, or a page that streams (or is prerendered) from a bundle that cannot, is found at
// start, not answered on every request.
type pageNames struct {
	log *slog.Logger

	mu sync.Mutex
	// used maps each page name in use to where it is used (a route, Render, not-found).
	used map[string]string // guarded by mu
	// needing maps each need to the page names that have it and where.
	needing map[need]map[string]string // guarded by mu
	// bundle is the renderer's page names; nil until it answered.
	bundle map[string]bool // guarded by mu
	// can are the needs the bundle meets.
	can map[need]bool // guarded by mu
	// reported are the problems already logged.
	reported map[string]bool // guarded by mu
	// absent are names a render was refused for since bundle was learned (NOT_FOUND): the
	// renderer may have moved to another bundle since.
	absent map[string]bool // guarded by mu
	// notFound is the page the bundle's notFoundPage export names: "" without one, or while
	// the bundle is not known. notFoundUsedBy says what renders it ("": nothing).
	notFound, notFoundUsedBy string // guarded by mu
}

func newPageNames(log *slog.Logger) *pageNames {
	return &pageNames{log: log, used: map[string]string{}, needing: map[need]map[string]string{}, reported: map[string]bool{}, absent: map[string]bool{}}
}

// noNotFoundPage says that the bundle names no not-found page.
const noNotFoundPage = "the renderer's bundle exports no notFoundPage"

// A need is what a page's route asks of the bundle besides the page: what it does, and the
// exports that do it.
type need struct{ does, exports string }

var (
	streaming    = need{"streams", "renderToPipeableStream (react-dom/server)"}
	prerendering = need{"is partially prerendered", "prerenderToNodeStream (react-dom/static) and resumeToPipeableStream (react-dom/server)"}
)

// use records that where uses page, with needs; a problem the bundle is known to have with
// it is logged at once.
func (n *pageNames) use(page, where string, needs ...need) {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, known := n.used[page]
	fresh := !known
	if !known {
		n.used[page] = where
	}
	for _, nd := range needs {
		pages := n.needing[nd]
		if pages == nil {
			pages = map[string]string{}
			n.needing[nd] = pages
		}
		if _, ok := pages[page]; !ok {
			pages[page], fresh = where, true
		}
	}
	if fresh { // else nothing new to report: a name used on every request costs a lookup
		n.reportLocked()
	}
}

// useNotFound records that where renders the bundle's not-found page, whichever it names.
func (n *pageNames) useNotFound(where string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.notFoundUsedBy = where
	n.reportLocked()
}

// notFoundPage is the page the bundle's notFoundPage export names: "" without one, or while
// the bundle is not known (or n is nil: a page made without a site).
func (n *pageNames) notFoundPage() string {
	if n == nil {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.notFound
}

// usedLocked is every page name in use, by where it is used: the not-found page's too, once
// the bundle has named it.
func (n *pageNames) usedLocked() map[string]string {
	if n.notFound == "" || n.notFoundUsedBy == "" {
		return n.used
	}
	used := maps.Clone(n.used)
	if _, ok := used[n.notFound]; !ok {
		used[n.notFound] = n.notFoundUsedBy
	}
	return used
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
	n.can = map[need]bool{streaming: b.CanStream, prerendering: b.CanPrerender}
	n.notFound = b.NotFoundPage
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
	for page, where := range n.usedLocked() {
		if !n.bundle[page] && !n.reported[page] {
			n.reported[page] = true
			n.log.Error("the renderer's bundle has no such page: its requests answer 500", "page", page, "used_by", where)
		}
	}
	if n.notFoundUsedBy != "" && n.notFound == "" && !n.reported[noNotFoundPage] {
		n.reported[noNotFoundPage] = true
		n.log.Error(noNotFoundPage+": the not-found page is left to the browser", "used_by", n.notFoundUsedBy)
	}
	for nd, pages := range n.needing {
		for page, where := range pages {
			if !n.can[nd] && !n.reported[nd.does+" "+page] {
				n.reported[nd.does+" "+page] = true
				n.log.Error("the page "+nd.does+", but the renderer's bundle does not export "+nd.exports+": its requests answer the client-side shell",
					"page", page, "used_by", where)
			}
		}
	}
}

// missing returns an error naming every page in use that the bundle lacks, and every page
// that streams while the bundle cannot, or nil (also while the bundle is not known).
func (n *pageNames) missing() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var absent []string
	for page, where := range n.usedLocked() {
		if n.absent[page] || n.bundle != nil && !n.bundle[page] {
			absent = append(absent, fmt.Sprintf("%q (%s)", page, where))
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
	if n.bundle != nil && n.notFoundUsedBy != "" && n.notFound == "" {
		errs = append(errs, fmt.Errorf("%s (%s): its pages file must export notFoundPage, the name of the page "+
			"that answers 404", noNotFoundPage, n.notFoundUsedBy))
	}
	for _, nd := range []need{streaming, prerendering} {
		if n.bundle == nil || n.can[nd] || len(n.needing[nd]) == 0 {
			continue
		}
		var pages []string
		for page, where := range n.needing[nd] {
			pages = append(pages, fmt.Sprintf("%q (%s)", page, where))
		}
		slices.Sort(pages)
		errs = append(errs, fmt.Errorf("page %s %s, but the renderer's bundle does not export %s "+
			"(sidecar-ssr-build's bundle does; a bundle built otherwise must export them)", strings.Join(pages, ", "), nd.does, nd.exports))
	}
	return errors.Join(errs...)
}
