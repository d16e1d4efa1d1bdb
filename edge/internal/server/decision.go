package server

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
)

// decision is what a page's Loader decided before any render, by the rules the renderer
// applies to a load() result (renderer/src/decision.js): a redirect wins over NotFound,
// NotFound over Status. Both sides run the cases of proto/testdata/page-decisions.json.
type decision struct {
	// redirect answers with a redirect there, without a render.
	redirect string
	// notFound renders the app's not-found page.
	notFound bool
	// status is the response's; 0 leaves the page's own.
	status int
}

// redirectStatuses are those browsers follow with a Location.
var redirectStatuses = []int{
	http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect,
}

// decide is l's decision. A status no response can have is the loader's bug, told rather
// than sent (net/http would panic on it).
func decide(l *Result) (decision, error) {
	if l.Redirect != "" {
		status := cmp.Or(l.RedirectStatus, http.StatusFound)
		if !slices.Contains(redirectStatuses, status) {
			return decision{}, fmt.Errorf("a redirect with status %d, not one of %v", status, redirectStatuses)
		}
		return decision{redirect: l.Redirect, status: status}, nil
	}
	if l.NotFound {
		return decision{notFound: true, status: http.StatusNotFound}, nil
	}
	if l.Status != 0 && (l.Status < 200 || l.Status > 599) {
		return decision{}, fmt.Errorf("status %d, not from 200 to 599", l.Status)
	}
	return decision{status: l.Status}, nil
}
