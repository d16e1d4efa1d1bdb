package sharedcache

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache/redistest"
)

// TestPurgeRefusals: with a key, every entry of the purge stream but a purge signed with it
// is refused, counted by reason, and purges nothing; the replica goes on reading.
func TestPurgeRefusals(t *testing.T) {
	address := redistest.Start(t)
	s := newStoreWith(t, Options{Address: address, HMACKey: testKey})
	heard := hear(t, s)
	c := admin(t, address)
	ctx := context.Background()
	signed := message{Kind: "path", Value: "/p", ID: "1", At: time.Now().UnixNano()}.signed("ssr:purgelog", testKey)
	altered := signed
	altered.Value = "/"
	tests := []struct {
		name, payload, reason string
	}{
		{"unsigned", forged("prefix", "/", "2"), "unsigned"},
		{"signed with another key", signed.signed("ssr:purgelog", bytes.Repeat([]byte("o"), 32)).encode(), "bad_mac"},
		{"signed for another site's stream", signed.signed("other:purgelog", testKey).encode(), "bad_mac"},
		{"altered after it was signed", altered.encode(), "bad_mac"},
		{"a tag over the limit", message{Kind: "tag", Value: strings.Repeat("t", maxTagBytes+1), ID: "3", At: 1}.signed("ssr:purgelog", testKey).encode(), "malformed"},
		{"an earlier version's", `{"Kind":"prefix","Value":"/","ID":"x"}`, "malformed"},
		{"not JSON", "\x00junk", "malformed"},
	}
	// As a replica writes a purge: on the stream, and a message on the channel that wakes
	// the others.
	write := func(values ...any) {
		c.XAdd(ctx, &redis.XAddArgs{Stream: "ssr:purgelog", Values: values})
		c.Publish(ctx, "ssr:purges", "")
	}
	for _, tc := range tests {
		before := metric(t, s, "edge_shared_cache_purges_refused_total", tc.reason)
		write("m", tc.payload)
		poll.Until(t, tc.name+": refused as "+tc.reason, func() bool {
			return metric(t, s, "edge_shared_cache_purges_refused_total", tc.reason) == before+1
		})
	}
	write("junk", "no message field")
	write("m", signed.encode())
	select {
	case p := <-heard:
		if p != (Purge{"path", "/p"}) {
			t.Errorf("heard %+v, want only the signed purge of /p", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the signed purge after the refused ones was not heard")
	}
	if got := metric(t, s, "edge_shared_cache_purges_refused_total", "malformed"); got != 4 {
		t.Errorf("%v refused as malformed, want 4", got)
	}
}
