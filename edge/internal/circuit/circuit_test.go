package circuit

import (
	"testing"
	"time"
)

func TestCircuit(t *testing.T) {
	t0 := time.Unix(0, 0)
	c := Breaker{OpenFor: time.Second}
	steps := []struct {
		name        string
		at          time.Duration
		unreachable bool
		wantAllowed bool
	}{
		{"closed", 0, true, true},
		{"still closed after one failure", 0, true, true},
		{"threshold reached: opens", 0, true, true},
		{"open: refused", 500 * time.Millisecond, false, false},
		{"open period over: one probe", 1100 * time.Millisecond, true, true},
		{"probe failed: open again", 1200 * time.Millisecond, false, false},
		{"next probe", 2200 * time.Millisecond, false, true},
		{"probe succeeded: closed", 2200 * time.Millisecond, false, true},
	}
	for _, s := range steps {
		allowed := c.Allow(t0.Add(s.at))
		if allowed != s.wantAllowed {
			t.Fatalf("%s: allowed=%v, want %v", s.name, allowed, s.wantAllowed)
		}
		if allowed {
			c.Record(t0.Add(s.at), s.unreachable)
		}
	}
	for range threshold {
		c.Record(t0, true)
	}
	if !c.Allow(t0.Add(5 * time.Second)) {
		t.Fatalf("no probe after the open period")
	}
	if c.Allow(t0.Add(5 * time.Second)) {
		t.Errorf("a second call went out while the probe was out")
	}
}
