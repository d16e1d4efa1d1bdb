package sharedcache

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache/redistest"
)

// FuzzPurgeMessage: whatever a client of the store writes to the purge stream is parsed
// without a panic, and refused for one of the counted reasons; what parses is a valid purge
// or Done that encodes back to itself and, with a key, carries that key's MAC over every
// field. Every message this version publishes parses back to what it was, with the key or
// without; with the key, unsigned, signed with another key or for another stream, or with
// any field changed, it is refused.
func FuzzPurgeMessage(f *testing.F) {
	const stream = "ssr:purgelog"
	key := bytes.Repeat([]byte("k"), 32)
	at := time.Now().UnixNano()
	for _, seed := range []string{
		`{"Kind":"path","Value":"/products/7"}`, // an earlier version's: no ID, no time
		`{"Kind":"prefix","Value":"/","ID":"x"}`,
		message{Kind: "tag", Value: "product:7", ID: newPurgeID(), At: at}.encode(),
		message{Kind: "prefix", Value: "/p/", ID: "x", At: at}.signed(stream, key).encode(),
		message{ID: "0123456789ab0123456789ab", At: at, Done: true}.signed(stream, key).encode(),
		`{"Kind":"key","Value":"b1 GET /{$} /\u0000x","ID":"1","At":1}`,
		`{"Done":true,"ID":"1","At":1,"Kind":"path"}`, `{"Kind":"prefix","Value":"","ID":"1","At":1}`, `{"kind":"TAG","value":"x","id":"1","at":1}`,
		`{"Kind":"path","Value":"\xff","ID":"1","At":1}`, `{"Kind":"tag","Value":"t","ID":"1","At":1,"MAC":"AAAA"}`,
		`{"Kind":"tag","Value":"t","ID":"1","At":-5}`, `{"Kind":"tag","Value":"t","ID":"1","At":1e18}`,
		`[]`, `null`, `{"ID":` + strings.Repeat("9", 100) + `}`, `{"Kind":"tag","Value":"` + strings.Repeat("x", maxTagBytes+1) + `","ID":"1","At":1}`,
	} {
		f.Add(seed, "path", "/a", at)
	}
	f.Fuzz(func(t *testing.T, payload, kind, value string, at int64) {
		for _, macKey := range [][]byte{nil, key} {
			m, err := parseMessage(payload, stream, macKey)
			if err != nil {
				if !errors.Is(err, errUnsigned) && !errors.Is(err, errBadMAC) && !errors.Is(err, errMalformed) {
					t.Fatalf("%q refused for no counted reason: %v", payload, err)
				}
				continue
			}
			if again, err := parseMessage(m.encode(), stream, macKey); err != nil || !sameMessage(again, m) {
				t.Fatalf("%q parsed as %+v, which encodes to %q, parsed as %+v (%v)", payload, m, m.encode(), again, err)
			}
			if !m.Done && m.Purge().valid() != nil || m.Done && (m.Kind != "" || m.Value != "") || m.ID == "" || len(m.ID) > maxIDLength || m.At <= 0 {
				t.Fatalf("%q parsed as %+v, neither a valid purge nor a Done", payload, m)
			}
			if macKey != nil && !bytes.Equal(m.MAC, m.signature(stream, macKey)) {
				t.Fatalf("%q parsed with a key, and its MAC is not the key's", payload)
			}
		}

		// What Purge publishes: any purge it takes, with its ID and time, then Done.
		if (Purge{Kind: kind, Value: value}).valid() != nil || at <= 0 {
			return // refused before any publish
		}
		for _, sent := range []message{{Kind: kind, Value: value, ID: newPurgeID(), At: at}, {ID: newPurgeID(), At: at, Done: true}} {
			for _, macKey := range [][]byte{nil, key} {
				if got, err := parseMessage(sent.signed(stream, macKey).encode(), stream, macKey); err != nil || !sameMessage(got, sent.signed(stream, macKey)) {
					t.Fatalf("%+v sent, %+v (%v) received", sent, got, err)
				}
			}
			changed := sent.signed(stream, key) // the key's MAC, of another time
			if changed.At++; at == math.MaxInt64 {
				changed.At = at - 1
			}
			for name, tc := range map[string]struct {
				m    message
				want error
			}{
				"unsigned":        {sent, errUnsigned},
				"another key":     {sent.signed(stream, bytes.Repeat([]byte("o"), 32)), errBadMAC},
				"another stream":  {sent.signed("other:purgelog", key), errBadMAC},
				"a field changed": {changed, errBadMAC},
				"another's MAC":   {message{ID: "x", At: 1, Done: true, MAC: sent.signed(stream, key).MAC}, errBadMAC},
			} {
				if _, err := parseMessage(tc.m.encode(), stream, key); !errors.Is(err, tc.want) {
					t.Fatalf("%s: %+v parsed with the key: %v, want %v", name, tc.m, err, tc.want)
				}
			}
		}
	})
}

// sameMessage compares two messages, MAC included.
func sameMessage(a, b message) bool {
	return a.Kind == b.Kind && a.Value == b.Value && a.ID == b.ID && a.At == b.At && a.Done == b.Done && bytes.Equal(a.MAC, b.MAC)
}

// FuzzGlobEscape: an escaped string matches itself and nothing else in Redis's glob
// matcher (ported below), and with a trailing * exactly the strings it begins: a purge by
// prefix finds every path index under its prefix, and no other.
func FuzzGlobEscape(f *testing.F) {
	for _, seed := range [][2]string{
		{"/products/8*", "/products/8*"}, {"/products/8*", "/products/81"}, {`a\`, `a\b`}, {"[a-z]", "b"},
		{"[^]]", "x"}, {"?", "x"}, {`\\*`, `\x`}, {"\xff\x80[", "\xff\x80["}, {"ssr:ix:path:/", "ssr:ix:path:/x"},
		{"", ""}, {"", "a"}, {"*", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	const index = "ssr:ix:path:" // as the store's keys and purge's patterns begin
	f.Fuzz(func(t *testing.T, s, other string) {
		pattern := globEscape(index + s)
		if !stringMatch(pattern, index+s) {
			t.Fatalf("globEscape(%q) = %q does not match it", index+s, pattern)
		}
		if got := stringMatch(pattern, index+other); got != (other == s) {
			t.Fatalf("globEscape(%q) = %q matches %q: %v", index+s, pattern, index+other, got)
		}
		if got, want := stringMatch(pattern+"*", index+other), strings.HasPrefix(other, s); got != want {
			t.Fatalf("globEscape(%q)+\"*\" matches %q: %v, want %v", index+s, index+other, got, want)
		}
	})
}

// TestGlobMatchIsRedis: the port of Redis's matcher agrees with the real redis-server's
// KEYS on patterns and keys that exercise each of its cases.
func TestGlobMatchIsRedis(t *testing.T) {
	s := newStore(t, redistest.Start(t), time.Second)
	ctx := context.Background()
	keys := []string{"a", "ab", "abc", "a*", "a?", `a\`, "a[", "a]", "b", "", "-", "\xff", "\x80x", "[a]", "a-c", "aXc"}
	patterns := []string{
		"a", "a*", "*", "**", "a?", "?", "a\\*", `a\\`, "[ab]", "[^a]", "[a-c]", "[c-a]", "[]]", "[", "a[", "[\\]]",
		"a[*", "\\", "a\\", "*c", "a*c", "[\\", "[a-]", "\xff", "[\x80-\xff]*", "a[b-", "?*?",
	}
	for _, k := range keys {
		if err := s.rdb.Set(ctx, "m:"+k, "1", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range append(patterns, globEscape("a*"), globEscape(`a\`), globEscape("[a]"), globEscape("a[")+"*") {
		found, err := s.rdb.Keys(ctx, "m:"+p).Result()
		if err != nil {
			t.Fatal(err)
		}
		redis := map[string]bool{}
		for _, k := range found {
			redis[strings.TrimPrefix(k, "m:")] = true
		}
		for _, k := range keys {
			if got := stringMatch("m:"+p, "m:"+k); got != redis[k] {
				t.Errorf("pattern %q, key %q: the port says %v, redis-server %v", p, k, got, redis[k])
			}
		}
	}
}

// stringMatch is Redis's glob matcher (stringmatchlen in src/util.c, Redis 7), case
// sensitive as SCAN's MATCH is, ported line by line: p and s index the pattern and the
// string as C's pointers do, and plen, slen are their lengths left. C's char is signed on
// the platforms Redis builds for (it matters to [a-z] ranges over bytes above 0x7f), and
// reading a string at its end gives its terminating NUL.
func stringMatch(pattern, str string) bool {
	skipLongerMatches := false
	return stringMatchImpl(pattern, 0, len(pattern), str, 0, len(str), &skipLongerMatches, 0)
}

// char is b[i] as C reads it.
func char(b string, i int) int {
	if i < len(b) {
		return int(int8(b[i]))
	}
	return 0
}

func stringMatchImpl(pattern string, p, plen int, str string, s, slen int, skipLongerMatches *bool, nesting int) bool {
	if nesting > 1000 { // protection against abusive patterns
		return false
	}
	for plen > 0 && slen > 0 {
		switch char(pattern, p) {
		case '*':
			for plen > 0 && char(pattern, p+1) == '*' {
				p++
				plen--
			}
			if plen == 1 {
				return true
			}
			for slen > 0 {
				if stringMatchImpl(pattern, p+1, plen-1, str, s, slen, skipLongerMatches, nesting+1) {
					return true
				}
				if *skipLongerMatches {
					return false
				}
				s++
				slen--
			}
			*skipLongerMatches = true
			return false
		case '?':
			s++
			slen--
		case '[':
			p++
			plen--
			not := char(pattern, p) == '^'
			if not {
				p++
				plen--
			}
			match := false
		class:
			for {
				switch {
				case char(pattern, p) == '\\' && plen >= 2:
					p++
					plen--
					if char(pattern, p) == char(str, s) {
						match = true
					}
				case char(pattern, p) == ']':
					break class
				case plen == 0:
					p--
					plen++
					break class
				case plen >= 3 && char(pattern, p+1) == '-':
					start, end, c := char(pattern, p), char(pattern, p+2), char(str, s)
					if start > end {
						start, end = end, start
					}
					p += 2
					plen -= 2
					if c >= start && c <= end {
						match = true
					}
				default:
					if char(pattern, p) == char(str, s) {
						match = true
					}
				}
				p++
				plen--
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s++
			slen--
		case '\\':
			if plen >= 2 {
				p++
				plen--
			}
			fallthrough
		default:
			if char(pattern, p) != char(str, s) {
				return false
			}
			s++
			slen--
		}
		p++
		plen--
		if slen == 0 {
			for char(pattern, p) == '*' {
				p++
				plen--
			}
			break
		}
	}
	return plen == 0 && slen == 0
}
