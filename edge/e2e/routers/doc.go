// Package routers holds the end-to-end tests of the public package behind the routers a Go
// team picks (Gin, chi, net/http's ServeMux). It is a module of its own, so that the edge
// module, which the teams import, does not require any router.
package routers
