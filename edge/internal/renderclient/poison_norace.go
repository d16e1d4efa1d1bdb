//go:build !race

package renderclient

const poisonReleased = false
