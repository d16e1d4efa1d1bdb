package sharedcache

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
)

// TestSuperseded: a purge refuses the copies it matches that were stored before it was
// made, or less than clockSlack after; a copy stored later, or one it does not match, is
// served. A purge claimed to be made in the future counts as made when it is heard.
func TestSuperseded(t *testing.T) {
	made := time.Now().Add(-time.Minute)
	copyOf := func(path string, stored time.Duration, tags ...string) *htmlcache.Entry {
		e := doc("b1 GET "+path+" "+path, path, tags...)
		e.Stored = made.Add(stored)
		return e
	}
	tests := []struct {
		name       string
		purge      Purge
		at         time.Time
		copy       *htmlcache.Entry
		superseded bool
	}{
		{"stored an hour before", Purge{"path", "/p"}, made, copyOf("/p", -time.Hour), true},
		{"stored just before", Purge{"path", "/p"}, made, copyOf("/p", -time.Millisecond), true},
		{"stored within the clock slack after", Purge{"path", "/p"}, made, copyOf("/p", clockSlack/2), true},
		{"stored after the clock slack", Purge{"path", "/p"}, made, copyOf("/p", 2*clockSlack), false},
		{"another path", Purge{"path", "/p"}, made, copyOf("/q", -time.Hour), false},
		{"by key", Purge{"key", "b1 GET /p /p"}, made, copyOf("/p", -time.Hour), true},
		{"by tag", Purge{"tag", "t"}, made, copyOf("/p", -time.Hour, "s", "t"), true},
		{"by another tag", Purge{"tag", "t"}, made, copyOf("/p", -time.Hour, "s"), false},
		{"by prefix", Purge{"prefix", "/p/"}, made, copyOf("/p/7", -time.Hour), true},
		{"by a prefix it does not start with", Purge{"prefix", "/p/"}, made, copyOf("/p", -time.Hour), false},
		{"claimed a day ahead, stored after it was heard", Purge{"path", "/p"}, time.Now().Add(24 * time.Hour), copyOf("/p", time.Minute+2*clockSlack), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newHeardPurges()
			q.add(tc.purge, "id", tc.at, false)
			if got := q.superseded(tc.copy); got != tc.superseded {
				t.Errorf("%+v made at %s, copy of %s stored at %s: superseded %v, want %v",
					tc.purge, tc.at.Format(time.TimeOnly), tc.copy.Path, tc.copy.Stored.Format(time.TimeOnly), got, tc.superseded)
			}
		})
	}
}

// TestHeardPurgesBounds: past either bound, the oldest purges are forgotten, and the
// indexes forget them with them: what remains, and only that, still refuses copies.
func TestHeardPurgesBounds(t *testing.T) {
	tests := []struct {
		name           string
		maxCount       int
		maxBytes       int
		values         int
		valueBytes     int
		wantRemembered int
	}{
		{"by count", 10, 1 << 20, 25, 8, 10},
		{"by bytes", 1000, 10 * (1000 + len("id00") + heardOverhead), 25, 1000, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newHeardPurges()
			q.maxCount, q.maxBytes = tc.maxCount, tc.maxBytes
			forgotten := 0
			path := func(i int) string { return fmt.Sprintf("/%03d/%s", i, strings.Repeat("x", tc.valueBytes-5)) }
			for i := range tc.values {
				_, _, forgot := q.add(Purge{"path", path(i)}, fmt.Sprintf("id%02d", i), time.Now(), false)
				forgotten += forgot
				if count, bytes := q.size(); count > tc.maxCount || bytes > tc.maxBytes {
					t.Fatalf("after %d purges: %d remembered, %d bytes", i+1, count, bytes)
				}
				checkIndexes(t, &q)
			}
			if count, _ := q.size(); count != tc.wantRemembered || forgotten != tc.values-count {
				t.Errorf("%d remembered, %d forgotten; want %d remembered of %d", count, forgotten, tc.wantRemembered, tc.values)
			}
			for i := range tc.values {
				e := doc("k", path(i))
				e.Stored = time.Now().Add(-time.Hour)
				if want := i >= tc.values-tc.wantRemembered; q.superseded(e) != want || q.pending(e) != want {
					t.Errorf("purge %d: superseded %v, pending %v; want both %v", i, q.superseded(e), q.pending(e), want)
				}
			}
		})
	}
}

// TestOpenPurges: another replica's purge is open (refuses its copies however recent) until
// its Done, or purgeRetryFor after it was made; this replica's own until it is confirmed.
func TestOpenPurges(t *testing.T) {
	e := doc("k", "/p")
	e.Stored = time.Now().Add(time.Hour) // never superseded: only pending refuses it
	tests := []struct {
		name    string
		at      time.Time
		own     bool
		confirm bool
		open    bool
	}{
		{"another replica's, just made", time.Now(), false, false, true},
		{"another replica's, confirmed", time.Now(), false, true, false},
		{"another replica's, made before purgeRetryFor", time.Now().Add(-purgeRetryFor - time.Second), false, false, false},
		{"this replica's, made before purgeRetryFor", time.Now().Add(-purgeRetryFor - time.Second), true, false, true},
		{"this replica's, confirmed", time.Now(), true, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newHeardPurges()
			pp, _, _ := q.add(Purge{"path", "/p"}, "id", tc.at, tc.own)
			if tc.confirm && tc.own {
				q.confirmOwn(pp)
			} else if tc.confirm {
				q.confirm("id")
			}
			if got := q.pending(e); got != tc.open {
				t.Errorf("pending %v, want %v", got, tc.open)
			}
			checkIndexes(t, &q)
		})
	}
}
