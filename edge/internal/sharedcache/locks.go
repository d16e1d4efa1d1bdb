package sharedcache

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/redis/go-redis/v9"
)

// A render lock makes one replica render a cold page while the others wait for the store's
// copy (the server's shared.go).

// release deletes a lock only if it still holds this holder's token: a lock that expired
// and was taken by another replica is not theirs to release.
var release = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

// Lock tries to become the one replica that renders key. It does not wait: acquired false
// means another replica holds the lock (and will store the result). unlock releases it.
func (s *Store) Lock(ctx context.Context, key string) (unlock func(), acquired bool, err error) {
	return s.LockFor(ctx, key, s.opts.LockTTL)
}

// LockFor is Lock for a render that may take up to ttl (its page's hard timeout and a
// margin): a holder that crashed loses the lock after ttl or Options.LockTTL, whichever
// is longer, and a live holder keeps it until it stored its result.
func (s *Store) LockFor(ctx context.Context, key string, ttl time.Duration) (unlock func(), acquired bool, err error) {
	ttl = max(ttl, s.opts.LockTTL)
	var token [12]byte
	rand.Read(token[:])
	holder := hex.EncodeToString(token[:])
	lockKey := s.opts.Prefix + "lock:" + key
	err = s.do(ctx, func(ctx context.Context) (err error) {
		acquired, err = s.rdb.SetNX(ctx, lockKey, holder, ttl).Result()
		return err
	})
	if err != nil || !acquired {
		return func() {}, false, err
	}
	return func() {
		s.do(context.Background(), func(ctx context.Context) error {
			return release.Run(ctx, s.rdb, []string{lockKey}, holder).Err()
		})
	}, true, nil
}
