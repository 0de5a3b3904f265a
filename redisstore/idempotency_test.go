package redisstore_test

import (
	"testing"

	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/redisstore"
	"github.com/agentcap/agentcap/storetest"
)

func TestIdempotencyConformance(t *testing.T) {
	prefixes := map[idempotency.Store]string{}
	storetest.Idempotency(t, storetest.IdempotencyFactory{
		New: func(t *testing.T) idempotency.Store {
			c, prefix := servicetest.Redis(t)
			s := newStore(t, c, redisstore.Config{Prefix: prefix}).Idempotency()
			prefixes[s] = prefix
			return s
		},
		// A second client on the same server and prefix: another instance.
		Reopen: func(t *testing.T, s idempotency.Store) idempotency.Store {
			c, _ := servicetest.Redis(t)
			return newStore(t, c, redisstore.Config{Prefix: prefixes[s]}).Idempotency()
		},
	})
}
