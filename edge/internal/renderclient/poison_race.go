//go:build race

package renderclient

// poisonReleased: tests run with the race detector, and there a borrowed buffer is
// overwritten as it is released, so that a response read after its release fails them.
const poisonReleased = true
