// Package poll is the tests' one way to wait for something that happens on another
// goroutine or in another process, where no event says so: ask again until it holds.
package poll

import (
	"testing"
	"time"
)

// Within is how long Until asks before it fails the test: far beyond what any condition
// here needs on a quiet machine, so that a loaded CI runner never fails a test by its clock.
const Within = time.Minute

// Until asks cond until it returns true, and fails the test, naming what it waited for,
// if it has not within Within. It returns at once when cond is already true.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Within)
	for wait := time.Millisecond; !cond(); wait = min(2*wait, 50*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", Within, what)
		}
		time.Sleep(wait)
	}
}
