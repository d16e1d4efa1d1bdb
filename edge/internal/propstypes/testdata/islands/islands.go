// Package islands declares islands as a shop does, for find_test.go.
package islands

import (
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/ssr"
)

type CartProps struct {
	User  string `json:"user"`
	Items int    `json:"items"`
}

type featured struct {
	IDs []int `json:"ids"`
}

func declare(pages *ssr.Server) {
	ssr.TypedIsland[CartProps](pages, "Cart", 0)
	ssr.TypedIsland[featured](pages, "Featured", time.Minute)
	pages.Island("Untyped", 0)
}
