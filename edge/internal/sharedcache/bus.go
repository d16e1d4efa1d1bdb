package sharedcache

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The purge bus: how a purge made on one replica reaches every replica's own cache (the
// purge stream and channel: message.go, follow.go, listen.go, streamread.go, resp.go,
// purgelog.go), the purges this replica has heard of, which refuse the store's stale copies
// (heard.go), and the retries of its own (retry.go). The store's side of a purge, removing
// its documents through their indexes, is purge.go.

// purgeBus is the Store's purge side.
type purgeBus struct {
	// purger is the purges' client (purgeClient), made once from purgerOptions: its own
	// pool, purgeCallTimeout for each call. heard are the purges this replica knows of;
	// started is when the Store was made.
	purger        *redis.Client
	purgerOnce    sync.Once
	purgerOptions *redis.Options
	heard         heardPurges
	started       time.Time
	counts        counts
	// loggedRefusal and loggedForgot are set once a purge refused for that reason, or one
	// forgotten, was logged; loggedOverRead once a read of the stream over its bound was.
	loggedRefusal  [len(refusals)]atomic.Bool
	loggedForgot   atomic.Bool
	loggedOverRead atomic.Bool
	// dialer makes the connections that read the purge stream and channel (resp.go);
	// closed is set by Close, and ends Subscribe.
	dialer respDialer
	closed atomic.Bool
}

// init makes the bus's clients' options from ro, the page calls' (before their client
// runs: it writes to ro as it connects).
func (b *purgeBus) init(ro *redis.Options) {
	purger := *ro
	purger.DialTimeout, purger.ReadTimeout, purger.WriteTimeout, purger.PoolTimeout = purgeCallTimeout, purgeCallTimeout, purgeCallTimeout, purgeCallTimeout
	purger.PoolSize, purger.MinIdleConns = 2, 0
	b.purgerOptions, b.heard, b.started = &purger, newHeardPurges(), time.Now()
	b.dialer = respDialer{network: ro.Network, addr: ro.Addr, username: ro.Username, password: ro.Password, db: ro.DB, tls: ro.TLSConfig.Clone()}
}
