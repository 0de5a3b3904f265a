package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/idempotency/idemtest"
	"github.com/agentcap/agentcap/idempotency/redisstore"
	"github.com/agentcap/agentcap/internal/servicetest"
)

func TestConformance(t *testing.T) {
	prefixes := map[idempotency.Store]string{}
	idemtest.Run(t, idemtest.Factory{
		New: func(t *testing.T) idempotency.Store {
			c, prefix := servicetest.Redis(t)
			s := redisstore.New(c, prefix)
			prefixes[s] = prefix
			return s
		},
		// A second client on the same server and prefix: another instance.
		Reopen: func(t *testing.T, s idempotency.Store) idempotency.Store {
			c, _ := servicetest.Redis(t)
			return redisstore.New(redis.UniversalClient(c), prefixes[s])
		},
	})
}
