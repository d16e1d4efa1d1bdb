package sharedcache

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// What the tests of purges read and set inside a Store.

// bound lowers the bounds of what s remembers of purges (before it subscribes).
func bound(s *Store, count, bytes int) { s.heard.maxCount, s.heard.maxBytes = count, bytes }

// remembered is how many purges s remembers, and the bytes they count for.
func remembered(s *Store) (count, bytes int) { return s.heard.size() }

// metric is s's metric name, with label reason (or none), as a registry gathers it.
func metric(t *testing.T, s *Store, name, reason string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(s)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) == 0 && reason == "" || len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no metric %s{reason=%q}", name, reason)
	return 0
}

// checkMemory fails t unless s's memory of purges is consistent (checkIndexes).
func checkMemory(t *testing.T, s *Store) {
	t.Helper()
	checkIndexes(t, &s.heard)
}

// checkIndexes fails t unless q's indexes, counts and bytes agree with its purges.
func checkIndexes(t *testing.T, q *heardPurges) {
	t.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	var made [kinds]map[string]int
	var open [kinds]map[string]int
	for k := range kinds {
		made[k], open[k] = map[string]int{}, map[string]int{}
	}
	bytes, opens := 0, 0
	for _, pp := range q.order {
		if q.byID[pp.id] != pp {
			t.Errorf("purge %s in order, not in byID", pp.id)
		}
		bytes += pp.size()
		made[kindIndex[pp.Kind]][pp.Value]++
		if pp.open {
			open[kindIndex[pp.Kind]][pp.Value]++
			opens++
		}
	}
	if len(q.byID) != len(q.order) || bytes != q.bytes || opens != q.opens {
		t.Errorf("%d in byID, %d in order; %d bytes counted, %d there; %d open counted, %d open", len(q.byID), len(q.order), q.bytes, bytes, q.opens, opens)
	}
	for k := range kinds {
		for value, n := range made[k] {
			if q.made[k][value].n != n {
				t.Errorf("kind %d, value %.20q: made index counts %d, want %d", k, value, q.made[k][value].n, n)
			}
		}
		for value, n := range open[k] {
			if q.open[k][value] != n {
				t.Errorf("kind %d, value %.20q: open index counts %d, want %d", k, value, q.open[k][value], n)
			}
		}
		if len(q.made[k]) != len(made[k]) || len(q.open[k]) != len(open[k]) {
			t.Errorf("kind %d: %d made and %d open values indexed, want %d and %d", k, len(q.made[k]), len(q.open[k]), len(made[k]), len(open[k]))
		}
	}
}
