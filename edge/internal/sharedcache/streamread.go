// Reading the purge stream in bounded pieces: the scripts the store runs (they measure each
// entry and stop at a byte budget) and the calls that run them over the follower's own
// connection (resp.go), so that no read holds more than PurgeLogOptions.MaxReadBytes,
// whatever the stream holds.
package sharedcache

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// entry is an entry of the purge stream as a read holds it: its message field, or, for an
// entry over PurgeLogOptions.MaxEntryBytes, its size.
type entry struct {
	id, payload string
	size        int64
}

// streamRead is what one read found: whether the stream lost entries (dropGap, dropReset;
// -1 if not), else the entries of the range and whether more may follow them.
type streamRead struct {
	lost    int
	entries []entry
	more    bool
}

// readRange reads the entries from start to end (as XRANGE takes them), readBatch and
// MaxReadBytes at most. With an anchor, it first checks that the stream holds it.
func (f *follower) readRange(ctx context.Context, anchor, start, end string) (streamRead, error) {
	o := f.s.opts.PurgeLog
	v, err := f.run(ctx, readScript, anchor, start, end, strconv.Itoa(readBatch), messageField, strconv.Itoa(o.MaxEntryBytes),
		strconv.Itoa(o.MaxReadBytes-readHeader), strconv.Itoa(o.MaxReadBytes), strconv.Itoa(elementCost))
	if err != nil {
		return streamRead{}, err
	}
	a, ok := v.([]any)
	if !ok || len(a) < 2 || len(a)%2 != 0 {
		return streamRead{}, fmt.Errorf("sharedcache: the purge stream's read answered %T of %d", v, len(a))
	}
	r := streamRead{lost: -1}
	switch state, _ := a[0].(int64); state {
	case 1:
		return streamRead{lost: dropReset}, nil
	case 2:
		return streamRead{lost: dropGap}, nil
	}
	more, _ := a[1].(int64)
	r.more = more != 0
	for i := 2; i < len(a); i += 2 {
		x := entry{}
		x.id, ok = a[i].(string)
		switch p := a[i+1].(type) {
		case string:
			x.payload = p
		case int64: // measured by the script, and not sent
			x.size = max(p, 1)
		case tooLarge: // sent all the same, and skipped unread
			x.size = int64(p)
		default:
			ok = false
		}
		if !ok {
			return streamRead{}, fmt.Errorf("sharedcache: the purge stream's read answered an entry of %T, %T", a[i], a[i+1])
		}
		r.entries = append(r.entries, x)
	}
	return r, nil
}

// streamWalk is what one call of walkScript found: the newest and oldest entries it walked
// over ("": none), how many, the bytes a read of them holds, and whether more precede them.
type streamWalk struct {
	newest, oldest string
	walked, bytes  int
	more           bool
}

// walk walks back from end (as XREVRANGE takes it) over count entries at most, and bytes.
func (f *follower) walk(ctx context.Context, end string, count, bytes int) (streamWalk, error) {
	o := f.s.opts.PurgeLog
	v, err := f.run(ctx, walkScript, end, strconv.Itoa(count), strconv.Itoa(bytes), messageField,
		strconv.Itoa(o.MaxEntryBytes), strconv.Itoa(o.MaxReadBytes), strconv.Itoa(elementCost))
	if err != nil {
		return streamWalk{}, err
	}
	a, _ := v.([]any)
	if len(a) == 0 {
		return streamWalk{}, nil
	}
	if len(a) == 5 {
		var w streamWalk
		var walked, bytes, more int64
		var ok [5]bool
		w.newest, ok[0] = a[0].(string)
		w.oldest, ok[1] = a[1].(string)
		walked, ok[2] = a[2].(int64)
		bytes, ok[3] = a[3].(int64)
		more, ok[4] = a[4].(int64)
		if ok == [5]bool{true, true, true, true, true} {
			w.walked, w.bytes, w.more = int(walked), int(bytes), more != 0
			return w, nil
		}
	}
	return streamWalk{}, fmt.Errorf("sharedcache: the purge stream's walk answered %v", v)
}

// run runs script on the purge stream through the follower's connection (EVALSHA, then
// EVAL if the store does not have it).
func (f *follower) run(ctx context.Context, sc script, args ...string) (any, error) {
	v, err := f.call(ctx, append([]string{"EVALSHA", sc.sha, "1", f.s.streamKey()}, args...)...)
	if e := respError(""); errors.As(err, &e) && strings.HasPrefix(string(e), "NOSCRIPT") {
		v, err = f.call(ctx, append([]string{"EVAL", sc.src, "1", f.s.streamKey()}, args...)...)
	}
	return v, err
}

// call sends a command on the follower's connection, dialed first if need be, and reads
// its reply within PurgeLogOptions: MaxEntryBytes a string, MaxReadBytes in all.
func (f *follower) call(ctx context.Context, args ...string) (any, error) {
	if f.s.closed.Load() {
		return nil, redis.ErrClosed
	}
	if f.conn == nil {
		c, err := f.s.dialer.dial(ctx, purgeCallTimeout)
		if err != nil {
			return nil, err
		}
		f.conn = c
	}
	o := f.s.opts.PurgeLog
	v, err := f.conn.call(ctx, purgeCallTimeout+transferTime(o.MaxReadBytes), respLimits{maxString: o.MaxEntryBytes, maxBytes: o.MaxReadBytes}, args...)
	if f.conn.broken {
		f.close()
	}
	if errors.Is(err, errReplyTooLarge) && f.s.loggedOverRead.CompareAndSwap(false, true) {
		f.s.opts.Log.Warn("shared cache: a read of the purge stream answered more than its bound, and was dropped (logged once): the store does not run this version's script as it should",
			"max_read_bytes", o.MaxReadBytes)
	}
	return v, err
}

func (f *follower) close() {
	if f.conn != nil {
		f.conn.Close()
		f.conn = nil
	}
}

// withCallTimeout runs call within purgeCallTimeout. The client's own timeouts are not
// enough for a pipeline: on a new connection to a busy store, go-redis waits for it as long
// as the context lets it.
func withCallTimeout[T any](ctx context.Context, call func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, purgeCallTimeout)
	defer cancel()
	return call(ctx)
}

// script is a Lua script and its SHA-1, as EVALSHA names it.
type script struct{ src, sha string }

func newScript(src string) script {
	sum := sha1.Sum([]byte(src))
	return script{src: src, sha: hex.EncodeToString(sum[:])}
}

// The scripts read the stream one entry at a time, and stop once they copied (a script
// copies what it reads) the bytes they were given, after one entry at least: a call costs
// the store a copy of that much and one entry, however large its entries.

// entryLua measures an entry e: its message field (field; "" if none), or its size when over
// largest; its size; and what a read of it holds, as respConn counts (element an element,
// 20 bytes for each length's digits).
const entryLua = `
local function measure(e, field, largest, element)
  local fields, size, value = e[2], 0, ''
  for i = 1, #fields, 2 do
    size = size + #fields[i] + #fields[i + 1]
    if fields[i] == field then value = fields[i + 1] end
  end
  if size > largest then value = size end
  local cost = 2 * (element + 20) + #e[1]
  if type(value) == 'string' then cost = cost + #value end
  return value, size, cost
end
`

// readScript reads the purge stream KEYS[1]. ARGV: an anchor (follower.anchor; "": no
// check), the range's start and end (as XRANGE takes them), the most entries, the message
// field, the largest entry (a larger one is answered by its size), the bytes the answer's
// entries may hold (the first is always answered), the bytes to copy, and respConn's
// elementCost. It answers {1, 0} when the stream is gone or empty, {2, 0} when it no longer
// holds the anchor, else {0, 1 if more may follow (0 if not), then ID, message or size, ...}.
var readScript = newScript(entryLua + `
local stream, anchor, start, stop = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local count, field, largest = tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
local held, copied, element = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
if anchor ~= '' then
  if redis.call('XLEN', stream) == 0 then return {1, 0} end
  if #redis.call('XRANGE', stream, anchor, anchor) == 0 then return {2, 0} end
end
local out = {0, 0}
for _ = 1, count do
  if copied <= 0 then break end
  local e = redis.call('XRANGE', stream, start, stop, 'COUNT', 1)[1]
  if not e then return out end
  local value, size, cost = measure(e, field, largest, element)
  if cost > held and #out > 2 then break end
  held, copied = held - cost, copied - size
  out[#out + 1] = e[1]
  out[#out + 1] = value
  start = '(' .. e[1]
end
out[2] = 1
return out
`)

// walkScript walks back over the purge stream KEYS[1]. ARGV: where from (as XREVRANGE takes
// it), the most entries, the bytes a read of them may hold (readScript's count) before it
// stops, the message field, the largest entry, the bytes to copy, and respConn's
// elementCost. It answers {} when there are no entries, else {the newest ID walked over,
// the oldest, how many, the bytes a read of them holds, 1 if more may precede them (0 if
// not)}.
var walkScript = newScript(entryLua + `
local stream, stop = KEYS[1], ARGV[1]
local count, bytes, field = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local largest, copied, element = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local newest, oldest, walked, held, more = false, false, 0, 0, 1
while walked < count and held < bytes and copied > 0 do
  local e = redis.call('XREVRANGE', stream, stop, '-', 'COUNT', 1)[1]
  if not e then
    more = 0
    break
  end
  local _, size, cost = measure(e, field, largest, element)
  newest, oldest = newest or e[1], e[1]
  walked, held, copied = walked + 1, held + cost, copied - size
  stop = '(' .. e[1]
end
if not newest then return {} end
return {newest, oldest, walked, held, more}
`)
