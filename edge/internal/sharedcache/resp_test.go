package sharedcache

import (
	"io"
	"net"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
)

// TestRespBounds: whatever a store sends, a reply read within respLimits holds at most
// maxBytes: a string over maxString is skipped unread, and a reply over maxBytes, nested too
// deep, or with a line longer than the buffer is an error, however long it goes on.
func TestRespBounds(t *testing.T) {
	const maxString, maxBytes = 64 << 10, 256 << 10
	huge := int64(16 << 20)
	repeat := func(s string) io.Reader { return &repeater{s: s} } // endless
	tests := []struct {
		name  string
		reply io.Reader
		want  any
		err   string
	}{
		{"a huge string", io.MultiReader(strings.NewReader("$16777216\r\n"), io.LimitReader(repeat("x"), huge), strings.NewReader("\r\n")), tooLarge(huge), ""},
		{"a huge string among others", io.MultiReader(strings.NewReader("*3\r\n$5\r\nhello\r\n$16777216\r\n"), io.LimitReader(repeat("x"), huge), strings.NewReader("\r\n:7\r\n")),
			[]any{"hello", tooLarge(huge), int64(7)}, ""},
		{"strings within the limit, over the bound together", io.MultiReader(strings.NewReader("*1000\r\n"), repeat("$65536\r\n"+strings.Repeat("x", 65536)+"\r\n")), nil, errReplyTooLarge.Error()},
		{"an endless array", io.MultiReader(strings.NewReader("*1000000000\r\n"), repeat(":1\r\n")), nil, errReplyTooLarge.Error()},
		{"nested arrays", repeat("*1\r\n"), nil, "nested"},
		{"an endless line", io.MultiReader(strings.NewReader("+"), repeat("x")), nil, "line"},
		{"an error", strings.NewReader("-ERR no\r\n"), nil, "ERR no"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client, store := net.Pipe()
			wrote := make(chan struct{})
			go func() {
				defer close(wrote)
				io.CopyBuffer(store, tc.reply, make([]byte, 64<<10)) // until the client closes
			}()
			client.SetDeadline(time.Now().Add(poll.Within)) // a reply that stalls fails the test
			c := newRespConn(client)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got, err := c.receive(respLimits{maxString: maxString, maxBytes: maxBytes})
			runtime.ReadMemStats(&after)
			client.Close()
			<-wrote
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("got %v, %v; want an error with %q", got, err, tc.err)
				}
			} else if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
			if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 2*maxBytes+respBuffer {
				t.Errorf("%d bytes allocated, want at most %d", allocated, 2*maxBytes+respBuffer)
			}
		})
	}
}

// repeater reads s over and over, for ever.
type repeater struct {
	s   string
	off int
}

func (r *repeater) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.s[r.off:])
		n += c
		r.off = (r.off + c) % len(r.s)
	}
	return n, nil
}
