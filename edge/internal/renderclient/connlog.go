package renderclient

import (
	"log/slog"
	"sync"
	"time"
)

// connLog logs the dials to the renderer's socket as an outage's start and end: grpc-go
// redials every MaxReconnectDelay with or without traffic, and a line per dial buried
// everything else for as long as the renderer was down. onFailure sees every failed dial.
type connLog struct {
	log       *slog.Logger
	socket    string
	onFailure func() // nil: none

	mu       sync.Mutex
	failures int       // guarded by mu: failed dials since the last one that succeeded
	since    time.Time // guarded by mu: when the first of them failed
	cause    string    // guarded by mu: the last logged failure's error
}

// dialed notes one dial's outcome. A failure is logged when dials start failing, or fail
// for another reason (nobody listening, then a listener of another user that is refused),
// and a success once after failures. Lines are written under mu, so they keep their order.
func (c *connLog) dialed(err error) {
	if err != nil && c.onFailure != nil {
		c.onFailure()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		if c.failures > 0 {
			c.log.Info("reconnected to the renderer", "socket", c.socket,
				"down", time.Since(c.since).Round(time.Millisecond), "failed_dials", c.failures)
		}
		c.failures, c.cause = 0, ""
		return
	}
	if c.failures == 0 {
		c.since = time.Now()
	}
	c.failures++
	if cause := err.Error(); cause != c.cause {
		c.cause = cause
		c.log.Warn("cannot connect to the renderer", "socket", c.socket, "err", err)
	}
}
