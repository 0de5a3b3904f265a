package idempotency_test

import (
	"testing"

	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/storetest"
)

func TestMemoryStore(t *testing.T) {
	storetest.Idempotency(t, storetest.IdempotencyFactory{
		New:    func(*testing.T) idempotency.Store { return idempotency.NewMemoryStore() },
		Reopen: func(_ *testing.T, s idempotency.Store) idempotency.Store { return s },
	})
}
