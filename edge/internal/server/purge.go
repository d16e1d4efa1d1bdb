package server

import (
	"context"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/sharedcache"
)

// purge applies p here at once, and through the store everywhere else. It counts the
// documents removed here or from the store, whichever is more; the error is the store's.
func (s *Site) purge(ctx context.Context, p sharedcache.Purge) (int, error) {
	n := purgeLocal(s.d.cache, p)
	if s.d.shared == nil {
		return n, nil
	}
	m, err := s.d.shared.purge(ctx, p)
	return max(n, m), err
}

// PurgeKey removes the document stored under key, in this replica's cache and, with a
// shared cache, in the store and every replica's cache (ctx bounds the store's part). It
// reports whether there was one.
// The error says the store's part failed (the purge is then retried in the background, and
// the store's copies it names are refused meanwhile): this replica's cache is purged anyway.
func (s *Site) PurgeKey(ctx context.Context, key string) (bool, error) {
	n, err := s.purge(ctx, sharedcache.Purge{Kind: "key", Value: key})
	return n > 0, err
}

// PurgePath is PurgeKey for every variant of a normalized path and query. It returns how
// many documents it removed.
func (s *Site) PurgePath(ctx context.Context, path string) (int, error) {
	return s.purge(ctx, sharedcache.Purge{Kind: "path", Value: path})
}

// PurgeTag is PurgePath for every document tagged tag.
func (s *Site) PurgeTag(ctx context.Context, tag string) (int, error) {
	return s.purge(ctx, sharedcache.Purge{Kind: "tag", Value: tag})
}

// PurgePrefix is PurgePath for every path that starts with prefix; an empty prefix purges
// nothing.
func (s *Site) PurgePrefix(ctx context.Context, prefix string) (int, error) {
	if prefix == "" {
		return 0, nil
	}
	return s.purge(ctx, sharedcache.Purge{Kind: "prefix", Value: prefix})
}

// purgeLocal applies p to one replica's cache. Kind "all" comes from the store's
// subscription only, when this replica may have missed purges.
func purgeLocal(c *htmlcache.Cache, p sharedcache.Purge) int {
	switch p.Kind {
	case "all":
		return c.PurgeIf(func(*htmlcache.Entry) bool { return true })
	case "key":
		if c.PurgeKey(p.Value) {
			return 1
		}
	case "path":
		return c.PurgePath(p.Value)
	case "prefix":
		return c.PurgePrefix(p.Value)
	case "tag":
		return c.PurgeTag(p.Value)
	}
	return 0
}
