package sharedcache

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// counts are what the Store counts of purges; Collect exports them.
type counts struct {
	refused    [len(refusals)]atomic.Uint64
	forgotten  atomic.Uint64
	drops      [dropReasons]atomic.Uint64
	lost       [dropReasons]atomic.Uint64
	superseded atomic.Uint64
}

var (
	refusedDesc = prometheus.NewDesc("edge_shared_cache_purges_refused_total",
		"Entries of the shared store's purge stream this replica refused, by reason: unsigned (no MAC while edge.shared_cache_key is set), bad_mac (another key's, or altered), too_large (over the entry limit, and not read), malformed (not a purge this version writes, or over the URL and tag limits).",
		[]string{"reason"}, nil)
	forgottenDesc = prometheus.NewDesc("edge_shared_cache_purges_forgotten_total",
		"Purges this replica forgot, oldest first, to remember at most 10,000 of them and 8 MiB: copies stored before a forgotten purge are no longer refused for it.",
		nil, nil)
	dropsDesc = prometheus.NewDesc("edge_shared_cache_local_drops_total",
		"Times this replica emptied its own cache because it may have missed purges (at most once per flush interval, for the first loss of the purge stream since the last time), by reason: gap (the purge stream no longer holds entries it had not read), reset (the stream is gone: the store restarted empty, or was flushed, or it was deleted).",
		[]string{"reason"}, nil)
	lostDesc = prometheus.NewDesc("edge_shared_cache_purge_stream_losses_total",
		"Times this replica found that the purge stream lost entries it had not read, by reason: gap (trimmed past them), reset (gone). Each one empties this replica's own cache, at most once per flush interval (edge_shared_cache_local_drops_total): many of them mean a client of the store deletes or trims the stream.",
		[]string{"reason"}, nil)
	supersededDesc = prometheus.NewDesc("edge_shared_cache_superseded_total",
		"Documents the shared store returned that were stored before a purge that matches them (written back after it, or rendered within a second of it): misses, deleted from the store.",
		nil, nil)
)

// Describe is prometheus.Collector's: the Store's metrics of purges, which the caller
// registers on its registry.
func (s *Store) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{refusedDesc, forgottenDesc, dropsDesc, lostDesc, supersededDesc} {
		ch <- d
	}
}

// Collect is prometheus.Collector's.
func (s *Store) Collect(ch chan<- prometheus.Metric) {
	for i, r := range refusals {
		ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, float64(s.counts.refused[i].Load()), r.reason)
	}
	ch <- prometheus.MustNewConstMetric(forgottenDesc, prometheus.CounterValue, float64(s.counts.forgotten.Load()))
	for i, reason := range dropLabels {
		ch <- prometheus.MustNewConstMetric(dropsDesc, prometheus.CounterValue, float64(s.counts.drops[i].Load()), reason)
		ch <- prometheus.MustNewConstMetric(lostDesc, prometheus.CounterValue, float64(s.counts.lost[i].Load()), reason)
	}
	ch <- prometheus.MustNewConstMetric(supersededDesc, prometheus.CounterValue, float64(s.counts.superseded.Load()))
}

// refuse counts the stream entry id, refused for err, and logs the first of each reason: a
// store that holds one likely holds many.
func (s *Store) refuse(id string, err error) {
	i := refusal(err)
	s.counts.refused[i].Add(1)
	if s.loggedRefusal[i].CompareAndSwap(false, true) {
		s.opts.Log.Warn("shared cache: purge refused (logged once per reason; the others are only counted)",
			"reason", refusals[i].reason, "entry", id, "err", err)
	}
}

// forgot counts n purges forgotten to stay within bounds, and logs the first.
func (s *Store) forgot(n int) {
	if n == 0 {
		return
	}
	s.counts.forgotten.Add(uint64(n))
	if s.loggedForgot.CompareAndSwap(false, true) {
		s.opts.Log.Warn("shared cache: purges forgotten to remember at most 10,000 of them and 8 MiB (logged once; the others are only counted): copies stored before them are no longer refused for them")
	}
}

// streamKey is the purge stream's key.
func (s *Store) streamKey() string { return s.opts.Prefix + "purgelog" }
