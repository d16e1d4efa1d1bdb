// Package redistest runs a real redis-server for tests of the shared cache.
package redistest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
)

// Start runs a real redis-server (make installs Debian's) on a unix socket in a temp dir,
// with no persistence, and returns its unix:// address. It stops when the test ends.
func Start(t testing.TB) string {
	address, _ := StartStoppable(t)
	return address
}

// StartStoppable is Start, and also returns a stop that kills the server at once (a store
// that dies under load). args are more redis-server options ("--maxmemory", "1mb").
func StartStoppable(t testing.TB, args ...string) (address string, stop func()) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is not installed: `make test-go` installs Debian's")
	}
	dir, err := os.MkdirTemp("", "redis-") // a unix socket path is limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(bin, append([]string{"--port", "0", "--unixsocket", socket, "--save", "", "--appendonly", "no", "--dir", dir,
		"--enable-debug-command", "local"}, args...)...) // DEBUG SLEEP plays a busy store
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cmd.Process.Kill()
			cmd.Wait()
			os.RemoveAll(dir)
		})
	}
	listening := false
	t.Cleanup(func() { // after stop: out is the whole output, no longer written
		if !listening {
			t.Logf("redis-server's output:\n%s", out.String())
		}
	})
	t.Cleanup(stop)
	// A connection, not the socket file: redis binds the file before it listens on it, and
	// a client in between is refused (a replica's first lock failed so).
	poll.Until(t, "redis-server listening on "+socket, func() bool {
		conn, err := net.Dial("unix", socket)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	listening = true
	return "unix://" + socket, stop
}

// Subscribed waits until the store at address has at least n subscribers of channel (its
// full name, e.g. "ssr:purges"): a message published before a subscription is in place is
// lost, so a test that publishes waits for this instead of sleeping.
func Subscribed(t testing.TB, address, channel string, n int) {
	t.Helper()
	c := client(t, address, time.Second)
	poll.Until(t, fmt.Sprintf("%d subscribers of %s at %s", n, channel, address), func() bool {
		counts, err := c.PubSubNumSub(context.Background(), channel).Result()
		return err == nil && counts[channel] >= int64(n)
	})
}

// Subscribers is how many subscribers of channel the store at address has now.
func Subscribers(t testing.TB, address, channel string) int {
	t.Helper()
	counts, err := client(t, address, time.Second).PubSubNumSub(context.Background(), channel).Result()
	if err != nil {
		t.Fatal(err)
	}
	return int(counts[channel])
}

// Busy makes the store at address busy for d (DEBUG SLEEP on a connection of its own) and
// returns once it is: a PING on another connection no longer answers within 20 ms.
func Busy(t testing.TB, address string, d time.Duration) {
	t.Helper()
	go client(t, address, d+5*time.Second).Do(context.Background(), "DEBUG", "SLEEP", d.Seconds())
	probe := client(t, address, 20*time.Millisecond)
	poll.Until(t, address+" busy in DEBUG SLEEP", func() bool { return probe.Ping(context.Background()).Err() != nil })
}

// Values are the store's string values by key: what the edges stored, as stored.
func Values(t testing.TB, address string) map[string][]byte {
	t.Helper()
	c, ctx := client(t, address, 5*time.Second), context.Background()
	values := map[string][]byte{}
	iter := c.Scan(ctx, 0, "*", 100).Iterator()
	for iter.Next(ctx) {
		if b, err := c.Get(ctx, iter.Val()).Bytes(); err == nil {
			values[iter.Val()] = b
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return values
}

// client is a client of the store at address whose calls wait at most timeout.
func client(t testing.TB, address string, timeout time.Duration) *redis.Client {
	t.Helper()
	o, err := redis.ParseURL(address)
	if err != nil {
		t.Fatal(err)
	}
	o.ReadTimeout, o.WriteTimeout, o.MaxRetries = timeout, timeout, -1
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}
