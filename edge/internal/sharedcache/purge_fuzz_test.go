package sharedcache

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache/redistest"
)

// FuzzPurgeMessage: whatever a client of the store publishes on the purges channel is
// parsed without a panic, and what parses is a valid purge or Done that encodes back to
// itself; every purge this version publishes parses back to what it was.
func FuzzPurgeMessage(f *testing.F) {
	for _, seed := range []string{
		`{"Kind":"path","Value":"/products/7"}`, // an earlier version's
		message{Kind: "tag", Value: "product:7", ID: newPurgeID()}.encode(),
		message{Kind: "prefix", Value: "/p/", ID: "x"}.encode(),
		message{ID: "0123456789ab0123456789ab", Done: true}.encode(),
		`{"Kind":"key","Value":"b1 GET /{$} /\u0000x","ID":"1"}`,
		`{"Done":true,"ID":"1","Kind":"path"}`, `{"Kind":"prefix","Value":""}`, `{"kind":"TAG","value":"x"}`,
		`{"Kind":"path","Value":"\xff"}`, `[]`, `null`, `{"ID":` + strings.Repeat("9", 100) + `}`,
	} {
		f.Add(seed, "path", "/a")
	}
	f.Fuzz(func(t *testing.T, payload, kind, value string) {
		m, err := parseMessage(payload)
		if err == nil {
			again, err := parseMessage(m.encode())
			if err != nil || again != m {
				t.Fatalf("%q parsed as %+v, which encodes to %q, parsed as %+v (%v)", payload, m, m.encode(), again, err)
			}
			if !m.Done && m.Purge().valid() != nil || m.Done && (m.ID == "" || m.Kind != "" || m.Value != "") || len(m.ID) > maxIDLength {
				t.Fatalf("%q parsed as %+v, neither a valid purge nor a Done", payload, m)
			}
		}
		// What Purge publishes: any purge it takes, with its ID, then Done.
		p := Purge{Kind: kind, Value: value}
		if p.valid() != nil || !utf8.ValidString(value) {
			return // refused before any publish; JSON carries UTF-8 only
		}
		for _, sent := range []message{{Kind: kind, Value: value, ID: newPurgeID()}, {ID: newPurgeID(), Done: true}} {
			if got, err := parseMessage(sent.encode()); err != nil || got != sent {
				t.Fatalf("%+v sent, %+v (%v) received", sent, got, err)
			}
		}
	})
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
