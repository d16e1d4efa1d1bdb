package renderclient

import (
	"sync"
	"time"
)

// circuitThreshold consecutive failures to reach the renderer open the circuit.
const circuitThreshold = 3

// circuit stops calling a renderer that cannot be reached, so requests fall back at once
// instead of each paying a connection attempt, and lets one call through at a time to probe.
type circuit struct {
	openFor time.Duration

	mu        sync.Mutex
	failures  int       // guarded by mu: consecutive failures to reach the renderer
	openUntil time.Time // guarded by mu
	probing   bool      // guarded by mu: a probe call is out
}

// allow reports whether a call may go out now.
func (c *circuit) allow(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failures < circuitThreshold {
		return true
	}
	if now.Before(c.openUntil) || c.probing {
		return false
	}
	c.probing = true
	return true
}

// record notes the outcome of a call that was allowed.
func (c *circuit) record(now time.Time, unreachable bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.probing = false
	if !unreachable {
		c.failures = 0
		return
	}
	c.failures++
	if c.failures >= circuitThreshold {
		c.openUntil = now.Add(c.openFor)
	}
}
