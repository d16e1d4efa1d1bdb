package main

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorsNameTheFileKeys: the binary's errors, the public package's included, name the
// config file's keys, not the Go options they set: a value the package refuses, and an
// address that cannot be listened on.
func TestErrorsNameTheFileKeys(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	assets := t.TempDir()
	os.Mkdir(filepath.Join(assets, "assets"), 0o755)
	os.WriteFile(filepath.Join(assets, "manifest.json"), []byte(`{"buildId":"b1","scripts":["/assets/c.js"]}`), 0o644)
	env := []string{"SSR_EDGE_ASSETS_DIR=" + assets, "SSR_EDGE_LISTEN=127.0.0.1:0", "SSR_RENDERER_GRPC_ADDRESS=unix://" + filepath.Join(assets, "none.sock")}
	for _, tt := range []struct {
		name string
		env  []string
		want string
	}{
		{"a value the package refuses", []string{"SSR_EDGE_RENDER_TIMEOUT=3s"}, "config: edge.render_timeout: 3s is above edge.hard_timeout 2s"},
		{"an address in use", []string{"SSR_EDGE_ADMIN_LISTEN=" + taken.Addr().String()}, "config: edge.admin_listen: cannot be listened on: listen tcp " + taken.Addr().String()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), nil, append(env, tt.env...), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
