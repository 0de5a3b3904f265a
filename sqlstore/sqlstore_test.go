package sqlstore_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/agentauth/store/storetest"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/audit/audittest"
	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/confirm/confirmtest"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/idempotency/idemtest"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/jobs"
	"github.com/agentcap/agentcap/jobs/jobstest"
	"github.com/agentcap/agentcap/sqlstore"
)

// backend makes empty databases: fresh returns a function opening a DB
// on a new one, each call another instance on the same database.
type backend struct {
	name  string
	fresh func(t testing.TB) func(t testing.TB) *sqlstore.DB
}

var backends = []backend{
	{"SQLite", func(t testing.TB) func(t testing.TB) *sqlstore.DB {
		path := filepath.Join(t.TempDir(), "agentcap.db")
		return func(t testing.TB) *sqlstore.DB {
			t.Helper()
			db, err := sqlstore.OpenSQLite(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			return db
		}
	}},
	{"PostgreSQL", func(t testing.TB) func(t testing.TB) *sqlstore.DB {
		newPool := servicetest.PostgresSchema(t)
		return func(t testing.TB) *sqlstore.DB {
			t.Helper()
			db, err := sqlstore.NewPostgres(context.Background(), newPool())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			return db
		}
	}},
}

// instances remembers, for each store handed to a conformance kit, how
// to open another instance on its database.
type instances[S comparable] struct {
	mu   sync.Mutex
	open map[S]func(t testing.TB) *sqlstore.DB
}

func (in *instances[S]) add(s S, open func(t testing.TB) *sqlstore.DB) S {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.open == nil {
		in.open = map[S]func(t testing.TB) *sqlstore.DB{}
	}
	in.open[s] = open
	return s
}

func (in *instances[S]) get(s S) func(t testing.TB) *sqlstore.DB {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.open[s]
}

func TestConformance(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Run("Provider", func(t *testing.T) {
				storetest.Run(t, func(t *testing.T) store.Store { return b.fresh(t)(t).Provider() })
			})
			t.Run("Audit", func(t *testing.T) {
				audittest.Run(t, func(t *testing.T) audit.Store { return b.fresh(t)(t).Audit() })
			})
			t.Run("Confirm", func(t *testing.T) {
				var in instances[confirm.Store]
				confirmtest.Run(t, confirmtest.Factory{
					New: func(t *testing.T) confirm.Store {
						open := b.fresh(t)
						return in.add(open(t).Confirm(), open)
					},
					Reopen: func(t *testing.T, s confirm.Store) confirm.Store { return in.get(s)(t).Confirm() },
				})
			})
			t.Run("Idempotency", func(t *testing.T) {
				var in instances[idempotency.Store]
				idemtest.Run(t, idemtest.Factory{
					New: func(t *testing.T) idempotency.Store {
						open := b.fresh(t)
						return in.add(open(t).Idempotency(), open)
					},
					Reopen: func(t *testing.T, s idempotency.Store) idempotency.Store { return in.get(s)(t).Idempotency() },
				})
			})
			t.Run("Jobs", func(t *testing.T) {
				var in instances[jobs.Store]
				jobstest.Run(t, jobstest.Factory{
					New: func(t *testing.T) jobs.Store {
						open := b.fresh(t)
						return in.add(open(t).Jobs(), open)
					},
					Reopen: func(t *testing.T, s jobs.Store) jobs.Store { return in.get(s)(t).Jobs() },
				})
			})
		})
	}
}

// BenchmarkProvider runs the provider store's benchmarks on each backend.
func BenchmarkProvider(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			storetest.Bench(b, func(b *testing.B) store.Store { return be.fresh(b)(b).Provider() })
		})
	}
}
