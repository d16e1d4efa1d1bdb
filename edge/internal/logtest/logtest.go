// Package logtest is a log destination that a test reads while the code it tests writes to
// it: renders, dials and their logs outlive the calls that started them.
package logtest

import (
	"strings"
	"sync"
)

// Buffer collects what is written to it, under one lock for writers and readers.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Lines are the lines a slog.TextHandler wrote at level ("WARN", "INFO"...).
func (l *Buffer) Lines(level string) []string {
	var lines []string
	for line := range strings.Lines(l.String()) {
		if strings.Contains(line, "level="+level+" ") {
			lines = append(lines, line)
		}
	}
	return lines
}
