// Package circuit stops calling a dependency that cannot be reached (the renderer, the
// shared cache's store), so requests go on without it at once instead of each paying for a
// connection attempt or a timeout, and lets one call through at a time to probe.
package circuit

import (
	"sync"
	"time"
)

// threshold consecutive failures open the circuit.
const threshold = 3

// Breaker is one dependency's circuit. The zero value with OpenFor set is ready.
type Breaker struct {
	// OpenFor is how long the circuit stays open before a probe call may go out.
	OpenFor time.Duration

	mu        sync.Mutex
	failures  int       // guarded by mu: consecutive failures
	openUntil time.Time // guarded by mu
	probing   bool      // guarded by mu: a probe call is out
}

// Allow reports whether a call may go out now.
func (c *Breaker) Allow(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failures < threshold {
		return true
	}
	if now.Before(c.openUntil) || c.probing {
		return false
	}
	c.probing = true
	return true
}

// Record notes the outcome of a call that was allowed.
func (c *Breaker) Record(now time.Time, unreachable bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.probing = false
	if !unreachable {
		c.failures = 0
		return
	}
	c.failures++
	if c.failures >= threshold {
		c.openUntil = now.Add(c.OpenFor)
	}
}
