package sharedcache

import (
	"encoding/binary"
	"testing"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
)

// rawValue is e as the store holds it under storeKey, written as the format does but with no
// check: what a writer other than an edge could put there.
func rawValue(t *testing.T, storeKey string, e *htmlcache.Entry) []byte {
	t.Helper()
	return encode(nil, storeKey, e, nil)
}

// hugeCounts are values of a few hundred bytes, each claiming far more elements (or bytes)
// than it holds, by what they claim.
func hugeCounts(t *testing.T, key string) map[string][]byte {
	t.Helper()
	str := func(b []byte, s string) []byte { return append(binary.AppendUvarint(b, uint64(len(s))), s...) }
	u := binary.AppendUvarint
	head := func() []byte {
		b := []byte{formatVersion, 0}
		for _, s := range []string{key, "/", `"e"`, "", ""} {
			b = str(b, s)
		}
		b = u(b, 200)
		b = binary.AppendVarint(b, 1)
		return u(u(u(b, 60e9), 0), 0)
	}
	pad := func(b []byte) []byte { // to 272 bytes, as in the issue
		for len(b) < 272 {
			b = append(b, 1)
		}
		return b
	}
	const many = 1 << 22
	body := func() []byte { return append(str(u(u(u(head(), 0), 0), 1), ""), 1, 'x') }
	return map[string][]byte{
		"tags":          pad(u(head(), many)),
		"header names":  pad(u(u(head(), 0), many)),
		"header values": pad(u(str(u(u(head(), 0), 1), "X-A"), many)),
		"bodies":        pad(u(u(u(head(), 0), 0), many)),
		"body length":   pad(u(str(u(u(u(head(), 0), 0), 1), ""), 1<<30)),
		"nonce offsets": pad(u(body(), many+1)),
		"string length": pad(u([]byte{formatVersion, 0}, 1<<40)),
	}
}
