package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/confirm/sqlitestore"
	"github.com/agentcap/agentcap/storetest"
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
	paths := map[confirm.Store]string{}
	storetest.Confirm(t, storetest.ConfirmFactory{
		New: func(t *testing.T) confirm.Store {
			path := filepath.Join(t.TempDir(), "confirm.db")
			s := open(t, path)
			paths[s] = path
			return s
		},
		Reopen: func(t *testing.T, s confirm.Store) confirm.Store { return open(t, paths[s]) },
	})
}

func TestSweep(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "confirm.db"))
	ctx := context.Background()
	past := time.Now().Add(-time.Minute)
	if err := s.Put(ctx, "id", confirm.Record{Subject: "s", ExpiresAt: past}, past); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Sweep(ctx); n != 1 || err != nil {
		t.Errorf("swept %d: %v", n, err)
	}
}
