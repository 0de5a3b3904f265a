package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/idempotency/pgstore"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/storetest"
)

func open(t *testing.T, pool *pgxpool.Pool) *pgstore.Store {
	t.Helper()
	s, err := pgstore.New(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	pools := map[idempotency.Store]func() *pgxpool.Pool{}
	storetest.Idempotency(t, storetest.IdempotencyFactory{
		New: func(t *testing.T) idempotency.Store {
			newPool := servicetest.PostgresSchema(t)
			s := open(t, newPool())
			pools[s] = newPool
			return s
		},
		Reopen: func(t *testing.T, s idempotency.Store) idempotency.Store { return open(t, pools[s]()) },
	})
}
