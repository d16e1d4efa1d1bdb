package server

import "net/http"

// ownHeader returns a header of h that the edge sets itself (blockedHeaders), or "": a
// document from the shared store that names one was not stored by an edge (pageHeaders
// drops them from every page), and is not served.
func ownHeader(h http.Header) string {
	for name := range h {
		if blockedHeaders[http.CanonicalHeaderKey(name)] {
			return name
		}
	}
	return ""
}
