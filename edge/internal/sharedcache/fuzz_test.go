package sharedcache

import (
	"bytes"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
)

// fuzzKey is the key FuzzStoreDecode reads every value for, and fuzzMACKey the HMAC key of
// its keyed reads.
const fuzzKey = "b1 GET /{$} /"

var fuzzMACKey = bytes.Repeat([]byte{7}, 32)

// FuzzStoreDecode: any value read from the store is decoded without a panic, within a small
// multiple of its length in memory, and only a valid document is accepted: decode is what
// stands between whatever can write to the store and every edge.
func FuzzStoreDecode(f *testing.F) {
	storeKey := "ssr:doc:" + fuzzKey
	stored := time.Unix(1_700_000_000, 5)
	seeds := []*htmlcache.Entry{
		{Key: fuzzKey, Path: "/?q=1", Tags: []string{"home", "product:7"}, Status: 200, ETag: `"e"`, ServerBuild: "s", Bundle: "b",
			Header: http.Header{"Link": {"</a.js>; rel=modulepreload", "</b.css>; rel=preload"}, "Cache-Control": {"public"}},
			Bodies: map[string][]byte{"": []byte("<html><script></script></html>"), "br": {1, 2, 3}, "gzip": {4, 5}},
			Stored: stored, TTL: time.Minute, StaleWhileRevalidate: time.Minute, StaleIfError: time.Hour},
		{Key: fuzzKey, Path: "/", Status: 404, ETag: `"n"`, Bodies: map[string][]byte{"": []byte("<script><script>")},
			NonceAt: []int{7, 15}, Stored: stored, TTL: time.Second},
		{Key: fuzzKey, Path: "/", Status: 308, Header: http.Header{"Location": {"/to"}}, Stored: stored, TTL: time.Minute},
		{Key: fuzzKey, Path: "/p", Status: 200, ETag: `"p"`, Bodies: map[string][]byte{"": []byte("<script><main><!--$?-->")}, NonceAt: []int{7},
			Resume: &htmlcache.Resume{Page: "p", Props: []byte(`{}`), Postponed: []byte(`{"replayNodes":[]}`)}, Stored: stored, TTL: time.Minute},
	}
	for _, e := range seeds {
		for _, keyed := range []bool{false, true} {
			var macKey []byte
			if keyed {
				macKey = fuzzMACKey
			}
			v := encode(nil, storeKey, e, macKey)
			f.Add(v, keyed)
			for _, at := range []int{1, 2, 10, len(v) / 2, len(v) - 1} { // truncated
				f.Add(v[:at], keyed)
			}
			flipped := bytes.Clone(v) // a byte changed: caught by the MAC, or a change of field
			flipped[len(v)/3] ^= 0x40
			f.Add(flipped, keyed)
			f.Add(append(bytes.Clone(v), 0), keyed) // a byte after the entry
		}
	}
	for _, v := range hugeCounts(&testing.T{}, fuzzKey) {
		f.Add(v, false)
	}
	f.Add([]byte{}, false)
	f.Add([]byte{2, 0}, false)            // another version
	f.Add([]byte{formatVersion, 2}, true) // unknown flags

	f.Fuzz(func(t *testing.T, value []byte, keyed bool) {
		var macKey []byte
		if keyed {
			macKey = fuzzMACKey
		}
		var e *htmlcache.Entry
		var err error
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		e, err = decode(value, storeKey, fuzzKey, macKey)
		runtime.ReadMemStats(&after)
		// Strings are copied, slices of strings cost 16 bytes per element of at least one byte:
		// 64 bytes per byte of input, plus a constant, bound what a hostile value can ask for.
		if n := after.TotalAlloc - before.TotalAlloc; n > 64*uint64(len(value))+64<<10 {
			t.Errorf("decoding %d bytes allocated %d", len(value), n)
		}
		if err != nil {
			if e != nil {
				t.Errorf("an error (%v) and an entry", err)
			}
			return
		}
		if err := check(e, fuzzKey); err != nil {
			t.Fatalf("accepted an invalid entry: %v", err)
		}
		// What was accepted is what an edge would write: it comes back the same.
		again, err := decode(encode(nil, storeKey, e, macKey), storeKey, fuzzKey, macKey)
		if err != nil || !sameEntry(again, e) {
			t.Fatalf("accepted %+v, which does not round-trip: %+v, %v", e, again, err)
		}
	})
}
