// Package rediseviction checks, when a Redis-backed store starts, that
// the server will not evict what the store writes. The kit's Redis stores
// (the replay cache, the rate limiter, idempotency keys, confirmation
// tokens) give their keys a TTL and rely on Redis to keep each key until
// that TTL ends: a replay cache that loses a token id accepts the token
// again, an idempotency store that loses a key runs the call again, a
// rate limiter that loses a bucket hands out a fresh burst. Under a
// maxmemory-policy other than noeviction (volatile-* and allkeys-*, the
// defaults of several managed services) a full Redis drops such keys
// early, silently, and the store fails open. With noeviction a full
// Redis refuses writes instead, which the stores report as errors and
// their callers answer with 503: they fail closed.
package rediseviction

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// NoEviction is the one maxmemory-policy under which Redis never drops a
// key before its TTL.
const NoEviction = "noeviction"

// Check reads the maxmemory-policy of the server behind client (CONFIG
// GET) and returns nil when it is noeviction, or when accept is set: the
// application then takes the risk, and nothing is asked. Otherwise it
// returns an error naming store (the package, for the message), the
// policy and what losing a key would mean (loss), and the two ways out;
// also when the server refuses CONFIG GET (managed services often do, and
// ACLs may), since the store then cannot tell.
func Check(ctx context.Context, client redis.UniversalClient, store, loss string, accept bool) error {
	if accept {
		return nil
	}
	m, err := client.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		return fmt.Errorf("%s: cannot read Redis's maxmemory-policy (CONFIG GET maxmemory-policy: %w), so it cannot tell whether Redis evicts keys before their TTL, and %s; "+
			"make sure the server's policy is noeviction and set AcceptEviction to start without the check", store, err, loss)
	}
	policy, ok := m["maxmemory-policy"]
	if !ok {
		return fmt.Errorf("%s: Redis did not report its maxmemory-policy, so it cannot tell whether Redis evicts keys before their TTL, and %s; "+
			"make sure the server's policy is noeviction and set AcceptEviction to start without the check", store, loss)
	}
	if policy != NoEviction {
		return fmt.Errorf("%s: Redis's maxmemory-policy is %s, under which a full Redis evicts keys before their TTL, and %s; "+
			"set maxmemory-policy noeviction (a full Redis then refuses writes, and the store fails closed), or set AcceptEviction to accept the risk", store, policy, loss)
	}
	return nil
}
