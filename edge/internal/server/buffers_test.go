package server

import "testing"

// TestPooledBuffersStaySmall: a buffer a large page grew is not kept for later responses.
func TestPooledBuffersStaySmall(t *testing.T) {
	for _, tc := range []struct {
		name string
		cap  int
	}{
		{"at the limit", maxPooledBufferBytes},
		{"past it", maxPooledBufferBytes + 1},
		{"a 7 MB page", 7 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := make([]byte, 100, tc.cap)
			putBuffer(&b, b)
			if got := buffers.Get().(*[]byte); cap(*got) > maxPooledBufferBytes {
				t.Errorf("got a pooled buffer of %d bytes, want at most %d", cap(*got), maxPooledBufferBytes)
			} else if len(*got) != 0 {
				t.Errorf("got a pooled buffer holding %d bytes, want it empty", len(*got))
			}
		})
	}
}
