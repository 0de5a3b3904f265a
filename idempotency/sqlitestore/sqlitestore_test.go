package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/idempotency/idemtest"
	"github.com/agentcap/agentcap/idempotency/sqlitestore"
)

func open(t *testing.T, path string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	paths := map[idempotency.Store]string{}
	idemtest.Run(t, idemtest.Factory{
		New: func(t *testing.T) idempotency.Store {
			path := filepath.Join(t.TempDir(), "idem.db")
			s := open(t, path)
			paths[s] = path
			return s
		},
		Reopen: func(t *testing.T, s idempotency.Store) idempotency.Store { return open(t, paths[s]) },
	})
}

func TestSweep(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "idem.db"))
	ctx := context.Background()
	if claimed, _, err := s.Claim(ctx, "k", "fp", "tok", 1); !claimed || err != nil {
		t.Fatal(claimed, err)
	}
	for {
		n, err := s.Sweep(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return
		}
	}
}
