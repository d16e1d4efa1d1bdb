package renderclient

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
)

// unixPath is the socket path of a unix: target ("unix:///abs/path" or "unix:rel/path").
func unixPath(target string) (string, bool) {
	if path, ok := strings.CutPrefix(target, "unix://"); ok {
		return path, true
	}
	return strings.CutPrefix(target, "unix:")
}

// dialOwnUser connects to the renderer's unix socket and refuses a listener that runs as
// another user than this process (or root): a local user who got to the socket's path first
// could otherwise serve their own HTML through the edge. The kernel vouches for the
// listener's uid (SO_PEERCRED), whatever happened to the path.
func dialOwnUser(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	uid, err := peerUID(conn.(*net.UnixConn))
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("reading the socket's peer credentials: %w", err)
	}
	if own := os.Geteuid(); uid != own && uid != 0 {
		conn.Close()
		return nil, fmt.Errorf("%s is served by uid %d, not by this process's uid %d (or root): refusing it; run the renderer as the same user as the edge", path, uid, own)
	}
	return conn, nil
}
