package sharedcache

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// The purge stream and the purges channel are read through a client of their own, not
// go-redis: go-redis reads a whole reply into memory (a bulk string's announced length is
// allocated before its first byte is read), and any client of the store, key or no key, can
// write a 512 MB stream entry or publish a 512 MB message. respConn holds at most a set
// number of bytes of a reply, whatever the store sends: it reads through its fixed buffer,
// skips every bulk string over its limit unread into memory (tooLarge stands in for it),
// and fails a reply that would hold more than its bound in all, strings and elements
// together. It speaks RESP2 (no HELLO), the protocol every Redis and Valkey answers in.

// respLimits bound one reply.
type respLimits struct {
	maxString int // a longer bulk string is skipped: the reply holds a tooLarge instead
	maxBytes  int // what the reply holds in all: its strings, and elementCost per element
}

// elementCost is what an element of a reply is charged beyond its bytes: the interface
// value holding it and its share of its array.
const elementCost = 32

// maxDepth bounds how deep arrays nest in a reply: no reply the package reads nests more
// than twice.
const maxDepth = 4

// tooLarge stands in a reply for a bulk string of that many bytes, skipped.
type tooLarge int64

// respError is an error reply of the store.
type respError string

func (e respError) Error() string { return "sharedcache: the store answered: " + string(e) }

// errReplyTooLarge is the error of a reply that would hold more than respLimits.maxBytes:
// no store that runs this package's scripts sends one.
var errReplyTooLarge = errors.New("sharedcache: a reply of the store over its bound in bytes")

// respDialer is what a respConn needs of Options.Address: a copy of go-redis's parsed
// options, taken before go-redis writes to them.
type respDialer struct {
	network, addr, username, password string
	db                                int
	tls                               *tls.Config
}

// respConn is one connection to the store, used by one goroutine.
type respConn struct {
	conn   net.Conn
	r      *bufio.Reader
	w      *bufio.Writer
	broken bool // a call failed other than by an error reply: the connection is out of step
}

// respBuffer is the size of a respConn's buffers, and so the longest line it reads.
const respBuffer = 16 << 10

// dial connects to the store, authenticates and selects the database, within timeout.
func (d respDialer) dial(ctx context.Context, timeout time.Duration) (*respConn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, d.network, d.addr)
	if err != nil {
		return nil, err
	}
	if d.tls != nil {
		tc := tls.Client(conn, d.tls.Clone())
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, err
		}
		conn = tc
	}
	c := newRespConn(conn)
	small := respLimits{maxString: 1 << 10, maxBytes: 4 << 10}
	// As go-redis does without HELLO: AUTH only with a password.
	if d.password != "" {
		args := []string{"AUTH", d.password}
		if d.username != "" {
			args = []string{"AUTH", d.username, d.password}
		}
		if _, err := c.call(ctx, timeout, small, args...); err != nil {
			c.Close()
			return nil, fmt.Errorf("sharedcache: authentication: %w", err)
		}
	}
	if d.db != 0 {
		if _, err := c.call(ctx, timeout, small, "SELECT", strconv.Itoa(d.db)); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

func newRespConn(conn net.Conn) *respConn {
	return &respConn{conn: conn, r: bufio.NewReaderSize(conn, respBuffer), w: bufio.NewWriterSize(conn, 4<<10)}
}

func (c *respConn) Close() error { return c.conn.Close() }

// call sends a command and reads its reply within timeout (and ctx). An error reply is a
// respError; any other error leaves the connection broken.
func (c *respConn) call(ctx context.Context, timeout time.Duration, lim respLimits, args ...string) (any, error) {
	c.conn.SetDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := c.send(args...); err != nil {
		return nil, err
	}
	return c.receive(lim)
}

// send writes a command.
func (c *respConn) send(args ...string) error {
	c.w.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		c.w.WriteString("$" + strconv.Itoa(len(a)) + "\r\n")
		c.w.WriteString(a)
		c.w.WriteString("\r\n")
	}
	if err := c.w.Flush(); err != nil {
		c.broken = true
		return err
	}
	return nil
}

// receive reads one reply within lim: a string, an int64, nil, a tooLarge, a respError
// inside an array, or an []any of those. An error reply at the top is returned as the error.
func (c *respConn) receive(lim respLimits) (any, error) {
	left := lim.maxBytes
	v, err := c.value(lim.maxString, &left, 0)
	if err != nil {
		c.broken = true
		return nil, err
	}
	if e, ok := v.(respError); ok {
		return nil, e
	}
	return v, nil
}

// value reads one value, charging what it holds to left.
func (c *respConn) value(maxString int, left *int, depth int) (any, error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			err = fmt.Errorf("sharedcache: a line of the store's reply over %d bytes", respBuffer)
		}
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("sharedcache: not a RESP2 reply: %.40q", line)
	}
	kind, text := line[0], line[1:len(line)-2]
	if *left -= elementCost + len(text); *left < 0 {
		return nil, errReplyTooLarge
	}
	switch kind {
	case '+':
		return string(text), nil
	case '-':
		return respError(text), nil
	case ':':
		return strconv.ParseInt(string(text), 10, 64)
	case '$':
		n, err := strconv.ParseInt(string(text), 10, 64)
		switch {
		case err != nil || n < -1:
			return nil, fmt.Errorf("sharedcache: not a RESP2 length: %.40q", text)
		case n == -1:
			return nil, nil
		case n > int64(maxString):
			// Skipped through the buffer, its end (CRLF) with it.
			if _, err := c.r.Discard(int(n) + 2); err != nil {
				return nil, err
			}
			return tooLarge(n), nil
		}
		if *left -= int(n); *left < 0 {
			return nil, errReplyTooLarge
		}
		return c.bulk(int(n))
	case '*':
		n, err := strconv.ParseInt(string(text), 10, 64)
		switch {
		case err != nil || n < -1:
			return nil, fmt.Errorf("sharedcache: not a RESP2 count: %.40q", text)
		case n == -1:
			return nil, nil
		case depth == maxDepth:
			return nil, fmt.Errorf("sharedcache: a reply nested over %d arrays deep", maxDepth)
		}
		// Not allocated by the count the store announces: each element is charged as it
		// comes, and a count over the bound fails at the bound.
		var a []any
		for range n {
			v, err := c.value(maxString, left, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		return a, nil
	}
	return nil, fmt.Errorf("sharedcache: not a RESP2 reply: %.40q", line)
}

// bulk reads a bulk string of n bytes, through the buffer, into a string of its own.
func (c *respConn) bulk(n int) (string, error) {
	var b strings.Builder
	b.Grow(n)
	for b.Len() < n {
		chunk, err := c.r.Peek(min(n-b.Len(), c.r.Size()))
		b.Write(chunk)
		c.r.Discard(len(chunk))
		if err != nil {
			return "", err
		}
	}
	if end, err := c.r.Peek(2); err != nil || string(end) != "\r\n" {
		return "", fmt.Errorf("sharedcache: a bulk string of the store's reply not ended by CRLF (%v)", err)
	}
	c.r.Discard(2)
	return b.String(), nil
}
