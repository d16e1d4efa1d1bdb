// Package redistest runs a real redis-server for tests of the shared cache.
package redistest

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
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
	t.Cleanup(stop)
	// A connection, not the socket file: redis binds the file before it listens on it, and
	// a client in between is refused (a replica's first lock failed so).
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if conn, err := net.Dial("unix", socket); err == nil {
			conn.Close()
			return "unix://" + socket, stop
		}
	}
	t.Fatalf("redis-server did not listen on %s:\n%s", socket, out.String())
	return "", stop
}
