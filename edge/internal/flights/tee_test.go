package flights

import (
	"errors"
	"testing"
)

// TestTee: a reader that starts late gets every chunk from its own position, is woken by
// each new one, and learns how the render ended.
func TestTee(t *testing.T) {
	tee := NewTee[string]()
	tee.Add([]byte("a"))
	chunks, ended, _, more := tee.From(0)
	if len(chunks) != 1 || ended {
		t.Fatalf("after one chunk: got %d chunks, ended %v", len(chunks), ended)
	}
	tee.Add([]byte("b"))
	<-more // closed by the new chunk
	if chunks, _, _, _ = tee.From(1); len(chunks) != 1 || string(chunks[0]) != "b" {
		t.Fatalf("from the second: got %q", chunks)
	}
	_, _, _, more = tee.From(2)
	aborted := errors.New("aborted")
	tee.End(aborted)
	<-more // closed by the end
	if chunks, ended, err, _ := tee.From(0); len(chunks) != 2 || !ended || err != aborted {
		t.Errorf("after the end: %d chunks, ended %v, err %v", len(chunks), ended, err)
	}
}
