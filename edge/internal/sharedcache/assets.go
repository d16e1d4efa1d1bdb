package sharedcache

import (
	"context"
	"crypto/hmac"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The client builds' files, which every edge stores for the edges of later builds (the
// server's storedassets.go): beside the documents, under "asset:", never read as one.

// assetTimeout bounds the upload of one of a build's files.
const assetTimeout = 30 * time.Second

// PutAsset stores one of the client build's files for ttl. Their names are content hashes:
// a name means the same bytes in every build, so any build's edge can serve it. A file is
// stored as it is, byte for byte (edges of earlier builds serve it so); with an HMAC key, its
// MAC is stored beside it, under "assetmac:", in the same transaction.
func (s *Store) PutAsset(ctx context.Context, name string, body []byte, ttl time.Duration) error {
	storeKey := s.opts.Prefix + "asset:" + name
	return s.within(ctx, assetTimeout, func(ctx context.Context) error {
		if s.opts.HMACKey == nil {
			return s.rdb.Set(ctx, storeKey, body, ttl).Err()
		}
		_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, storeKey, body, ttl)
			p.Set(ctx, s.opts.Prefix+"assetmac:"+name, s.assetMAC(storeKey, body), ttl)
			return nil
		})
		return err
	})
}

// Asset returns a file some build stored (PutAsset), or nil when none did. With an HMAC
// key, a file without a valid MAC beside it is an error wrapping ErrInvalid: a miss, which the
// caller counts; the first of them is logged.
func (s *Store) Asset(ctx context.Context, name string) ([]byte, error) {
	storeKey := s.opts.Prefix + "asset:" + name
	if s.opts.HMACKey == nil {
		return s.value(ctx, storeKey)
	}
	var values []any
	err := s.do(ctx, func(ctx context.Context) (err error) {
		values, err = s.rdb.MGet(ctx, storeKey, s.opts.Prefix+"assetmac:"+name).Result()
		return err
	})
	if err != nil || len(values) != 2 || values[0] == nil {
		return nil, err
	}
	body, _ := values[0].(string)
	sum, _ := values[1].(string)
	if !hmac.Equal([]byte(sum), s.assetMAC(storeKey, []byte(body))) {
		err := fmt.Errorf("sharedcache: asset %q: %w", name, invalid("no valid MAC beside it (edge.shared_cache_key)"))
		s.logInvalid(&s.loggedAsset, "asset", name, err)
		return nil, err
	}
	return []byte(body), nil
}

// assetMAC is the MAC of an asset's body stored under storeKey.
func (s *Store) assetMAC(storeKey string, body []byte) []byte {
	return signature(s.opts.HMACKey, storeKey, nil, body)
}
