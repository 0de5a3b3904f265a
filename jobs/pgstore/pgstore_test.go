package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/jobs"
	"github.com/agentcap/agentcap/jobs/pgstore"
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
	pools := map[jobs.Store]func() *pgxpool.Pool{}
	storetest.Jobs(t, storetest.JobsFactory{
		New: func(t *testing.T) jobs.Store {
			newPool := servicetest.PostgresSchema(t)
			s := open(t, newPool())
			pools[s] = newPool
			return s
		},
		// Another pool on the same schema: another instance.
		Reopen: func(t *testing.T, s jobs.Store) jobs.Store { return open(t, pools[s]()) },
	})
}

func TestNewNilPool(t *testing.T) {
	if _, err := pgstore.New(context.Background(), nil); err == nil {
		t.Error("nil pool accepted")
	}
}
