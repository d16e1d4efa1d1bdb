package sharedcache

import (
	"fmt"
	"time"
)

// PurgeLogOptions bound what a replica takes from the purge stream (Subscribe): its memory
// of purges stays within MaxReadBytes and the 8 MiB of purges it remembers, however large
// the stream's entries, and a writer of the store who can only delete or trim the stream
// empties its own cache at most once per FlushInterval.
type PurgeLogOptions struct {
	// MaxEntryBytes bounds an entry of the purge stream, its fields' names and values: a
	// larger one is refused and counted (edge_shared_cache_purges_refused_total, reason
	// too_large), and never read into memory; Purge refuses to write one. If zero,
	// defaults to 512 KiB: the largest purge this version writes (a 64 KiB URL, every byte
	// JSON-escaped) fits. At least 1 KiB.
	MaxEntryBytes int
	// MaxReadBytes bounds what one read of the stream holds, whatever the store answers. If
	// zero, defaults to 4 MiB, or twice MaxEntryBytes if that is more. At least twice
	// MaxEntryBytes.
	MaxReadBytes int
	// FlushInterval is the least time between two flushes of this replica's own cache
	// because the stream lost entries it had not read (trimmed past them, deleted, the
	// store restarted empty): a loss within it empties the cache once it has passed. If
	// zero, defaults to one minute.
	FlushInterval time.Duration
}

// The defaults of PurgeLogOptions, and the least MaxEntryBytes (a Done with its MAC takes
// about 150 bytes).
const (
	defaultMaxEntryBytes = 512 << 10
	defaultMaxReadBytes  = 4 << 20
	defaultFlushInterval = time.Minute
	minEntryBytes        = 1 << 10
)

// defaults fills o's zero fields, and says what is wrong with the others.
func (o *PurgeLogOptions) defaults() error {
	if o.MaxEntryBytes == 0 {
		o.MaxEntryBytes = defaultMaxEntryBytes
	}
	if o.MaxReadBytes == 0 {
		o.MaxReadBytes = max(defaultMaxReadBytes, 2*o.MaxEntryBytes)
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = defaultFlushInterval
	}
	switch {
	case o.MaxEntryBytes < minEntryBytes:
		return fmt.Errorf("sharedcache: PurgeLog.MaxEntryBytes %d, want at least %d", o.MaxEntryBytes, minEntryBytes)
	case o.MaxReadBytes < 2*o.MaxEntryBytes:
		return fmt.Errorf("sharedcache: PurgeLog.MaxReadBytes %d, want at least twice MaxEntryBytes (%d)", o.MaxReadBytes, 2*o.MaxEntryBytes)
	case o.FlushInterval < 0:
		return fmt.Errorf("sharedcache: PurgeLog.FlushInterval %s, negative", o.FlushInterval)
	}
	return nil
}
