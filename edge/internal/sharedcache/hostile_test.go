package sharedcache

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache/redistest"
)

// The store is written by whatever can reach it and knows its password, not only by edges
// (issue #24, finding 3). These tests write such values straight into a real redis-server and
// read them through the Store: none may crash the edge, allocate beyond its size, or be
// served.

// allocated is how many bytes the heap allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A value of 272 bytes claiming 2^22 elements is refused before anything is allocated for
// them (gob allocated 384 MiB for one; 2^28 was an out-of-memory crash no recover catches).
func TestHugeCountsAllocateLittle(t *testing.T) {
	s := newStore(t, redistest.Start(t), time.Second)
	ctx := context.Background()
	for name, value := range hugeCounts(t, "k") {
		t.Run(name, func(t *testing.T) {
			if err := s.rdb.Set(ctx, "ssr:doc:k", value, 0).Err(); err != nil {
				t.Fatal(err)
			}
			var e *htmlcache.Entry
			var err error
			n := allocated(func() { e, err = s.Get(ctx, "k") })
			if e != nil || !errors.Is(err, ErrInvalid) {
				t.Errorf("got %v, %v; want a miss for an invalid value", e, err)
			}
			if n > 1<<20 {
				t.Errorf("Get of a %d-byte value allocated %d KiB, want under 1 MiB", len(value), n>>10)
			}
		})
	}
}

// valid is a document as an edge stores it, for key.
func valid(key string) *htmlcache.Entry {
	return &htmlcache.Entry{
		Key: key, Path: "/", Status: 200, ETag: `"abc"`, Tags: []string{"home"},
		Header: http.Header{"Cache-Control": {"public, max-age=60"}, "Link": {"</a>; rel=preload", "</b>; rel=preload"}},
		Bodies: map[string][]byte{"": []byte("<html>page</html>")},
		Stored: time.Now(), TTL: time.Minute,
	}
}

// A value copied from another key is that key's document: a miss, never served for this one.
func TestValueUnderAnotherKeyIsAMiss(t *testing.T) {
	s := newStore(t, redistest.Start(t), time.Second)
	ctx := context.Background()
	if err := s.Set(ctx, valid("b1 GET /b /b")); err != nil {
		t.Fatal(err)
	}
	b, err := s.rdb.Get(ctx, "ssr:doc:b1 GET /b /b").Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.Set(ctx, "ssr:doc:b1 GET /a /a", b, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if e, err := s.Get(ctx, "b1 GET /a /a"); e != nil || !errors.Is(err, ErrInvalid) {
		t.Errorf("key a, holding key b's value: got %+v, %v; want a miss for an invalid value", e, err)
	}
	if e, err := s.Get(ctx, "b1 GET /b /b"); e == nil || err != nil {
		t.Errorf("key b: got %v, %v; want its document", e, err)
	}
}

// Documents no edge stores are misses: whatever they name never reaches WriteHeader or a client.
func TestInvalidDocumentsAreMisses(t *testing.T) {
	s := newStore(t, redistest.Start(t), time.Second)
	ctx := context.Background()
	tests := []struct {
		name   string
		change func(e *htmlcache.Entry)
	}{
		{"status 0 with a Set-Cookie", func(e *htmlcache.Entry) { e.Status = 0; e.Header.Set("Set-Cookie", "session=stolen") }},
		{"status 500", func(e *htmlcache.Entry) { e.Status = 500 }},
		{"status 302", func(e *htmlcache.Entry) { e.Status = 302; e.Bodies = nil }},
		{"status 1000", func(e *htmlcache.Entry) { e.Status = 1000 }},
		{"a Set-Cookie", func(e *htmlcache.Entry) { e.Header.Set("Set-Cookie", "session=stolen") }},
		{"Cache-Control: private", func(e *htmlcache.Entry) { e.Header.Set("Cache-Control", "private, max-age=60") }},
		{"Cache-Control: no-store", func(e *htmlcache.Entry) { e.Header.Set("Cache-Control", "No-Store") }},
		{"an unknown coding", func(e *htmlcache.Entry) { e.Bodies["evil"] = []byte("x") }},
		{"zstd, never stored", func(e *htmlcache.Entry) { e.Bodies["zstd"] = []byte("x") }},
		{"no identity body", func(e *htmlcache.Entry) { e.Bodies = map[string][]byte{"br": {1}} }},
		{"no body at all", func(e *htmlcache.Entry) { e.Bodies = nil }},
		{"a redirect with a body", func(e *htmlcache.Entry) { e.Status = 301; e.Header.Set("Location", "/x") }},
		{"a nonce offset past the body", func(e *htmlcache.Entry) { e.NonceAt = []int{3, 1 << 20} }},
		{"nonce offsets out of order", func(e *htmlcache.Entry) { e.NonceAt = []int{5, 3} }},
		{"nonce offsets with a compressed body", func(e *htmlcache.Entry) { e.NonceAt = []int{3}; e.Bodies["br"] = []byte{1} }},
		{"a header name with a space", func(e *htmlcache.Entry) { e.Header["Bad Name"] = []string{"x"} }},
		{"a header name with CRLF", func(e *htmlcache.Entry) { e.Header["X-A\r\nSet-Cookie: a=b\r\nX-B"] = []string{"x"} }},
		{"a header name not canonical", func(e *htmlcache.Entry) { e.Header["x-lower"] = []string{"x"} }},
		{"an empty header name", func(e *htmlcache.Entry) { e.Header[""] = []string{"x"} }},
		{"a header value with CRLF", func(e *htmlcache.Entry) { e.Header.Set("Link", "x\r\nSet-Cookie: a=b") }},
		{"an ETag with a newline", func(e *htmlcache.Entry) { e.ETag = "\"a\"\nSet-Cookie: a=b" }},
		{"a negative TTL", func(e *htmlcache.Entry) { e.TTL, e.StaleIfError = -time.Second, time.Hour }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := valid("k")
			tt.change(e)
			if err := s.rdb.Set(ctx, "ssr:doc:k", rawValue(t, "ssr:doc:k", e), 0).Err(); err != nil {
				t.Fatal(err)
			}
			got, err := s.Get(ctx, "k")
			if got != nil || !errors.Is(err, ErrInvalid) {
				t.Errorf("got %+v, %v; want a miss for an invalid value", got, err)
			}
			// An edge never writes what it would refuse.
			if err := s.Set(ctx, e); !errors.Is(err, ErrInvalid) {
				t.Errorf("Set: got %v, want an error for an invalid document", err)
			}
		})
	}
}

// What an edge stores comes back as it was: every field, nil and empty kept apart where
// the edge tells them apart (a redirect's bodies, nonce offsets).
func TestEveryFieldRoundTrips(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		var opts Options
		if keyed {
			opts.HMACKey = bytes.Repeat([]byte("k"), 32)
		}
		opts.Address, opts.Timeout = redistest.Start(t), time.Second
		s, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx := context.Background()
		stored := time.Now()
		for _, in := range []*htmlcache.Entry{
			{Key: "page", Path: "/p?q=1", Tags: []string{"a", "b"}, Status: 200, ETag: `"e"`, ServerBuild: "s1", Bundle: "b1",
				Header: http.Header{"Link": {"</a>", "</b>"}, "Vary": {"Accept-Language"}},
				Bodies: map[string][]byte{"": []byte("<p>x</p>"), "br": {1, 2}, "gzip": {3}},
				Stored: stored, TTL: time.Minute, StaleWhileRevalidate: 2 * time.Minute, StaleIfError: time.Hour},
			{Key: "nonced", Path: "/n", Status: 404, Bodies: map[string][]byte{"": []byte("<script><script>")}, NonceAt: []int{7, 15},
				Stored: stored, TTL: time.Minute},
			{Key: "no scripts", Path: "/e", Status: 200, Bodies: map[string][]byte{"": {}}, NonceAt: []int{}, Stored: stored, TTL: time.Minute},
			{Key: "redirect", Path: "/r", Status: 308, Header: http.Header{"Location": {"/to"}}, Stored: stored, TTL: time.Minute},
			{Key: "prelude", Path: "/pp", Status: 200, Bodies: map[string][]byte{"": []byte("<script><main><!--$?-->")}, NonceAt: []int{7},
				Resume: &htmlcache.Resume{Page: "product", Props: []byte(`{"id":1}`), Postponed: []byte(`{"replayNodes":[]}`)}, Stored: stored, TTL: time.Minute},
		} {
			if err := s.Set(ctx, in); err != nil {
				t.Fatal(err)
			}
			out, err := s.Get(ctx, in.Key)
			if err != nil || out == nil {
				t.Fatalf("%s: %v, %v", in.Key, out, err)
			}
			if !out.Stored.Equal(in.Stored) {
				t.Errorf("%s: stored at %s, want %s", in.Key, out.Stored, in.Stored)
			}
			out.Stored = in.Stored
			if !sameEntry(out, in) {
				t.Errorf("keyed %v: got %+v, want %+v", keyed, out, in)
			}
		}
	}
}

// sameEntry compares what the store keeps of two entries, nil and empty apart.
func sameEntry(a, b *htmlcache.Entry) bool {
	sameBodies := len(a.Bodies) == len(b.Bodies) && (a.Bodies == nil) == (b.Bodies == nil)
	for c, body := range a.Bodies {
		sameBodies = sameBodies && bytes.Equal(body, b.Bodies[c])
	}
	sameHeader := len(a.Header) == len(b.Header)
	for k, v := range a.Header {
		sameHeader = sameHeader && slices.Equal(v, b.Header[k])
	}
	return a.Key == b.Key && a.Path == b.Path && slices.Equal(a.Tags, b.Tags) && a.Status == b.Status && a.ETag == b.ETag &&
		a.ServerBuild == b.ServerBuild && a.Bundle == b.Bundle && sameBodies && sameHeader &&
		slices.Equal(a.NonceAt, b.NonceAt) && (a.NonceAt == nil) == (b.NonceAt == nil) && a.Stored.Equal(b.Stored) &&
		a.TTL == b.TTL && a.StaleWhileRevalidate == b.StaleWhileRevalidate && a.StaleIfError == b.StaleIfError && sameResume(a.Resume, b.Resume)
}

func sameResume(a, b *htmlcache.Resume) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Page == b.Page && bytes.Equal(a.Props, b.Props) && bytes.Equal(a.Postponed, b.Postponed)
}

// With an HMAC key, only what an edge with the same key wrote, under the key it is read
// from, is served: documents and assets.
func TestHMACKeyAuthenticatesValues(t *testing.T) {
	address := redistest.Start(t)
	keyed := func(key string) *Store {
		s, err := New(Options{Address: address, Timeout: time.Second, HMACKey: []byte(key)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	const k1, k2 = "first-key-of-thirty-two-bytes-ok", "other-key-of-thirty-two-bytes-ok"
	a, b, other, open := keyed(k1), keyed(k1), keyed(k2), newStore(t, address, time.Second)
	ctx := context.Background()
	if _, err := New(Options{Address: address, HMACKey: []byte("short")}); err == nil {
		t.Error("a 5-byte HMAC key: got no error, want one")
	}

	if err := a.Set(ctx, valid("k")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		store *Store
		want  bool
	}{{"same key", b, true}, {"another key", other, false}, {"no key (not checked)", open, true}} {
		if e, err := tc.store.Get(ctx, "k"); (e != nil) != tc.want || !tc.want && !errors.Is(err, ErrInvalid) {
			t.Errorf("a keyed document read with %s: got %v, %v; want found %v", tc.name, e, err, tc.want)
		}
	}
	// Unauthenticated, tampered with, or authenticated for another key: misses.
	if err := open.Set(ctx, valid("unkeyed")); err != nil {
		t.Fatal(err)
	}
	raw, _ := a.rdb.Get(ctx, "ssr:doc:k").Bytes()
	tampered := bytes.Replace(raw, []byte("page"), []byte("evil"), 1)
	a.rdb.Set(ctx, "ssr:doc:tampered", tampered, 0)
	e := valid("moved")
	a.rdb.Set(ctx, "ssr:doc:moved", encode(nil, "ssr:doc:k", e, []byte(k1)), 0) // signed for k, stored under moved
	for _, key := range []string{"unkeyed", "tampered", "moved"} {
		if e, err := a.Get(ctx, key); e != nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, %v; want a miss for an invalid value", key, e, err)
		}
	}

	if err := a.PutAsset(ctx, "client-ABCDEFGH.js", []byte("ok()"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if body, err := b.Asset(ctx, "client-ABCDEFGH.js"); string(body) != "ok()" || err != nil {
		t.Errorf("a keyed asset read with the same key: got %q, %v", body, err)
	}
	// Edges of earlier builds, and edges with no key, read the file as it is.
	if body, err := open.Asset(ctx, "client-ABCDEFGH.js"); string(body) != "ok()" || err != nil {
		t.Errorf("a keyed asset read with no key: got %q, %v", body, err)
	}
	a.rdb.Set(ctx, "ssr:asset:client-EVILEVIL.js", "evil()", 0)
	a.rdb.Set(ctx, "ssr:asset:client-ABCDEFGH.js", "evil()", 0) // its MAC is left as it was
	for _, tc := range []struct {
		name  string
		store *Store
	}{{"client-EVILEVIL.js", a}, {"client-ABCDEFGH.js", a}, {"client-ABCDEFGH.js", other}} {
		if body, err := tc.store.Asset(ctx, tc.name); body != nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("asset %s: got %q, %v; want a miss for an invalid value", tc.name, body, err)
		}
	}
	if body, err := a.Asset(ctx, "client-NOTTHERE.js"); body != nil || err != nil {
		t.Errorf("a missing asset: got %q, %v; want nil, nil", body, err)
	}
}

// logRecords collects a logger's records.
type logRecords struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	return nil
}
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

// text is every record, one a line, with its attributes.
func (l *logRecords) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, r := range l.records {
		b.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
		b.WriteString("\n")
	}
	return b.String()
}

// A store full of invalid values logs one line per kind of key, not one per read.
func TestInvalidValuesAreLoggedOncePerKind(t *testing.T) {
	logs := &logRecords{}
	s, err := New(Options{Address: redistest.Start(t), Timeout: time.Second, HMACKey: bytes.Repeat([]byte("k"), 32), Log: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, key := range []string{"a", "b", "c"} {
		s.rdb.Set(ctx, "ssr:doc:"+key, "junk", 0)
		s.rdb.Set(ctx, "ssr:asset:x-"+key+"AAAAAAA.js", "junk", 0)
		for range 2 {
			if _, err := s.Get(ctx, key); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Get %s: got %v, want an invalid value", key, err)
			}
			if _, err := s.Asset(ctx, "x-"+key+"AAAAAAA.js"); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Asset %s: got %v, want an invalid value", key, err)
			}
		}
	}
	if got := strings.Count(logs.text(), "\n"); got != 2 || !strings.Contains(logs.text(), "kind=document") || !strings.Contains(logs.text(), "kind=asset") {
		t.Errorf("logged:\n%s\nwant one line for documents and one for assets", logs.text())
	}
}

// No log line or error carries the store's password, however its address is mistyped
// (url.Parse's errors quote the whole URL) or however the store refuses it.
func TestPasswordsAreRedacted(t *testing.T) {
	const secret = "s3cr3t-Pw"
	for _, address := range []string{
		"redis://edge:" + secret + "@valkey:notaport/0",
		"redis://edge:" + secret + "@valkey:6379/zero",
		"redis://edge:" + secret + "@valkey:6379/0/1",
		"redis://edge:" + secret + "@valkey:6379/0?unknown=1",
		"redis://edge:" + secret + "@val key:6379/0",
		"redsi://edge:" + secret + "@valkey:6379/0",
		"redis://edge:12/" + secret + "@valkey:6379/0", // an unescaped "/": the rest parses as a path
		"redis://edge:x/" + secret + "@valkey:6379/0",
		"redis://edge:" + secret + "%zz@valkey:6379/0",
		"unix://edge:" + secret + "@",
		"edge:" + secret + "@valkey:6379",
	} {
		_, err := New(Options{Address: address})
		if err == nil {
			t.Errorf("%s: got no error, want one", Redact(address))
			continue
		}
		if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "sharedcache: address") {
			t.Errorf("New(%q): error %q, want one naming the address without its password", address, err)
		}
		if strings.Contains(Redact(address), secret) {
			t.Errorf("Redact(%q) = %q", address, Redact(address))
		}
	}
	for address, want := range map[string]string{
		"redis://edge:" + secret + "@valkey:6379/0":    "redis://edge:xxxxx@valkey:6379/0",
		"rediss://:" + secret + "@store.example:6380/": "rediss://:xxxxx@store.example:6380/",
		"unix://edge:" + secret + "@/run/valkey.sock":  "unix://edge:xxxxx@/run/valkey.sock",
		"redis://valkey:6379/0":                        "redis://valkey:6379/0",
	} {
		if got := Redact(address); got != want {
			t.Errorf("Redact(%q) = %q, want %q", address, got, want)
		}
	}

	// A store that refuses the password: neither the errors nor go-redis's own log lines
	// (slog's default logger, at debug level) name it.
	logs := &logRecords{}
	defaultLogger := slog.Default()
	slog.SetDefault(slog.New(logs))
	t.Cleanup(func() { slog.SetDefault(defaultLogger) })
	address, _ := redistest.StartStoppable(t, "--requirepass", "the-right-one")
	s := newStore(t, strings.Replace(address, "unix://", "unix://edge:"+secret+"@", 1), time.Second)
	_, err := s.Get(context.Background(), "k")
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("Get with a wrong password: got %v, want an error without the password", err)
	}
	debugLog{}.Printf(context.Background(), "redis: dial redis://edge:%s@valkey:6379/0: refused", secret)
	if text := logs.text(); strings.Contains(text, secret) || !strings.Contains(text, "redis://edge:xxxxx@valkey") {
		t.Errorf("logged:\n%s\nwant go-redis's lines without the password", text)
	}
}
