// Package redisreplay is an agentauth.ReplayCache shared through Redis, for
// applications that verify agent JWTs on more than one instance: a token
// id recorded by one instance is refused by every other.
//
// # Keys
//
// A recorded token id is the Redis string key prefix + key, holding "1",
// which Redis expires after the ttl. The key is the one the caller passes
// to CheckAndSet; for agent JWTs it is agentauth.ReplayKey's:
// ReplayKeyPrefix ("agentauth:jti:"), the agent id with every ':' and
// '%' percent-encoded, ':' and the jti. With the prefix
// "bank:agentauth:", the token "j1" of agent "agt_1" is the key
// "bank:agentauth:agentauth:jti:agt_1:j1", and the token "c" of agent
// "a:b" is "bank:agentauth:agentauth:jti:a%3Ab:c", which the token "b:c"
// of agent "a" ("...:jti:a:b:c") cannot share. The cache itself adds
// nothing but the prefix, so keys that differ stay different in Redis.
package redisreplay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/agentauth"
)

// Cache records token ids in Redis with SET key 1 NX PX ttl: Redis decides
// atomically which of several concurrent callers records a key first, and
// expires the key itself. It is safe for concurrent use.
type Cache struct {
	client redis.UniversalClient
	prefix string
}

var _ agentauth.ReplayCache = (*Cache)(nil)

// New returns a Cache storing keys under prefix (for example
// "myapp:replay:") through client. The client's own timeouts bound each
// call; an error from Redis is returned, so the verifier fails closed.
func New(client redis.UniversalClient, prefix string) *Cache {
	return &Cache{client: client, prefix: prefix}
}

// CheckAndSet implements agentauth.ReplayCache. The ttl is rounded up to a
// whole millisecond; a ttl that is not positive is an error.
func (c *Cache) CheckAndSet(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, fmt.Errorf("redisreplay: ttl %v is not positive", ttl)
	}
	ms := int64((ttl + time.Millisecond - 1) / time.Millisecond)
	err := c.client.Do(ctx, "SET", c.prefix+key, "1", "NX", "PX", ms).Err()
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, redis.Nil):
		return false, nil
	default:
		return false, fmt.Errorf("redisreplay: SET NX: %w", err)
	}
}
