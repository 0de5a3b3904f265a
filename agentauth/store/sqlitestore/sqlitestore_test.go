package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/agentauth/store/sqlitestore"
	"github.com/agentcap/agentcap/storetest"
)

func open(t testing.TB) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "agentauth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	storetest.Provider(t, func(t *testing.T) store.Store { return open(t) })
}

func BenchmarkStore(b *testing.B) {
	storetest.BenchProvider(b, func(b *testing.B) store.Store { return open(b) })
}
