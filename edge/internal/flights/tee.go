package flights

import (
	"sync"
	"time"
)

// A Tee is what a streaming render has produced so far, for every request that waits on it;
// R is the render's response.
type Tee[R any] struct {
	// Ready is closed once Head is set: the page's decision is known and its shell rendered.
	Ready chan struct{}
	// Head is the page's answer without its body (the Go loader's decision applied), and
	// Private whether it belongs to the request that started the flight alone. Both are
	// written before Ready is closed and only read after.
	Head    R
	Private bool
	// ShellAt is when the head arrived.
	ShellAt time.Time

	mu     sync.Mutex
	chunks [][]byte      // guarded by mu: the body so far
	more   chan struct{} // guarded by mu: closed, and replaced, when chunks grow or the render ends
	ended  bool          // guarded by mu
	err    error         // guarded by mu: why the render ended early; nil when it completed
}

// NewTee is an empty Tee, its head not ready.
func NewTee[R any]() *Tee[R] { return &Tee[R]{Ready: make(chan struct{}), more: make(chan struct{})} }

// Add appends a chunk of the body and wakes the readers.
func (t *Tee[R]) Add(chunk []byte) {
	t.mu.Lock()
	t.chunks = append(t.chunks, chunk)
	close(t.more)
	t.more = make(chan struct{})
	t.mu.Unlock()
}

// End says the render ended: completed (err nil) or not, and why.
func (t *Tee[R]) End(err error) {
	t.mu.Lock()
	t.ended, t.err = true, err
	close(t.more)
	t.mu.Unlock()
}

// From returns the chunks from the i-th on, whether the render has ended (and how), and a
// channel closed when there is more to read.
func (t *Tee[R]) From(i int) (chunks [][]byte, ended bool, err error, more <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.chunks[i:], t.ended, t.err, t.more
}
