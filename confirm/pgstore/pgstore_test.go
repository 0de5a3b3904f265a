package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/confirm/pgstore"
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
	pools := map[confirm.Store]func() *pgxpool.Pool{}
	storetest.Confirm(t, storetest.ConfirmFactory{
		New: func(t *testing.T) confirm.Store {
			newPool := servicetest.PostgresSchema(t)
			s := open(t, newPool())
			pools[s] = newPool
			return s
		},
		Reopen: func(t *testing.T, s confirm.Store) confirm.Store { return open(t, pools[s]()) },
	})
}
