package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentcap/agentcap/jobs"
	"github.com/agentcap/agentcap/jobs/sqlitestore"
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
	paths := map[jobs.Store]string{}
	storetest.Jobs(t, storetest.JobsFactory{
		New: func(t *testing.T) jobs.Store {
			path := filepath.Join(t.TempDir(), "jobs.db")
			s := open(t, path)
			paths[s] = path
			return s
		},
		Reopen: func(t *testing.T, s jobs.Store) jobs.Store { return open(t, paths[s]) },
	})
}

func TestOpenRefusesDSNs(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro"} {
		if _, err := sqlitestore.Open(context.Background(), p); err == nil {
			t.Errorf("%q accepted", p)
		}
	}
}
