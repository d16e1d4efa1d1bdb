// Package dynamicisland names a typed island at run time, which ssr-types cannot follow.
package dynamicisland

import "github.com/sidecar-ssr/sidecar-ssr/edge/ssr"

type props struct {
	N int `json:"n"`
}

func declare(pages *ssr.Server, name string) {
	ssr.TypedIsland[props](pages, name, 0)
}
