package redisstore

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// noEviction is the one maxmemory-policy under which Redis never drops a
// key before its TTL.
const noEviction = "noeviction"

// evictionLoss is what a key evicted early would cost, for the messages.
const evictionLoss = "a token id it forgets lets its token be used again, an idempotency key it forgets lets a retried call run twice, " +
	"a confirmation token it forgets is refused as unknown rather than as used, and a rate limit it forgets lets its caller through again at once"

// checkEviction reads the maxmemory-policy of the server behind client
// (CONFIG GET) and returns nil when it is noeviction, or when accept is
// set: the application then takes the risk, and nothing is asked.
// Otherwise it returns an error naming the policy, what losing a key
// would mean, and the two ways out; also when the server refuses CONFIG
// GET (managed services often do, and ACLs may), since the Store then
// cannot tell.
func checkEviction(ctx context.Context, client redis.UniversalClient, accept bool) error {
	if accept {
		return nil
	}
	m, err := client.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		return fmt.Errorf("redisstore: cannot read Redis's maxmemory-policy (CONFIG GET maxmemory-policy: %w), so it cannot tell whether Redis evicts keys before their TTL, and %s; "+
			"make sure the server's policy is noeviction and set AcceptEviction to start without the check", err, evictionLoss)
	}
	policy, ok := m["maxmemory-policy"]
	if !ok {
		return fmt.Errorf("redisstore: Redis did not report its maxmemory-policy, so it cannot tell whether Redis evicts keys before their TTL, and %s; "+
			"make sure the server's policy is noeviction and set AcceptEviction to start without the check", evictionLoss)
	}
	if policy != noEviction {
		return fmt.Errorf("redisstore: Redis's maxmemory-policy is %s, under which a full Redis evicts keys before their TTL, and %s; "+
			"set maxmemory-policy noeviction (a full Redis then refuses writes, and the stores fail closed), or set AcceptEviction to accept the risk", policy, evictionLoss)
	}
	return nil
}
