package renderclient

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a listener run as another user (see listenAs).
func init() {
	if path := os.Getenv("RENDERCLIENT_TEST_LISTEN"); path != "" {
		l, err := net.Listen("unix", path)
		if err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("listening\n")
		go func() {
			for {
				if c, err := l.Accept(); err == nil {
					c.Close()
				}
			}
		}()
		io.Copy(io.Discard, os.Stdin) // until the test closes our stdin
		os.Exit(0)
	}
}

func TestDialOwnUserAcceptsOurOwnListener(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	conn, err := dialOwnUser(context.Background(), path)
	if err != nil {
		t.Fatalf("our own listener was refused: %v", err)
	}
	conn.Close()
}

// TestDialOwnUserRefusesAnotherUsersListener: a socket another user serves, say after
// replacing ours, is refused whatever its path. Needs root to run a listener as nobody.
func TestDialOwnUserRefusesAnotherUsersListener(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a listener as another user")
	}
	const nobody = 65534
	dir, err := os.MkdirTemp("", "renderclient-peer-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o777)
	// The test binary sits in a directory only root may enter: run a copy.
	self, _ := os.Executable()
	binary := filepath.Join(dir, "listener")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(binary, data, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "r.sock")
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(), "RENDERCLIENT_TEST_LISTEN="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "listening\n" {
		t.Fatalf("the listener run as uid %d said %q", nobody, line)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := dialOwnUser(ctx, path)
	if err == nil {
		conn.Close()
		t.Fatal("a socket served by another user was accepted")
	}
	if !strings.Contains(err.Error(), "served by uid 65534") {
		t.Errorf("got error %q, want it to name the listener's uid", err)
	}
}
