package sqlstore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/jobs"
	"github.com/agentcap/agentcap/sqlstore"
	"github.com/agentcap/agentcap/storetest"
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
				storetest.Provider(t, func(t *testing.T) store.Store { return b.fresh(t)(t).Provider() })
			})
			t.Run("ProviderSharedChanges", func(t *testing.T) {
				// Every read through the cache that a count of changes
				// keeps valid.
				storetest.Provider(t, func(t *testing.T) store.Store {
					db := b.fresh(t)(t)
					db.SetChanges(&counter{})
					return db.Provider()
				})
			})
			t.Run("Audit", func(t *testing.T) {
				storetest.Audit(t, func(t *testing.T) audit.Store { return b.fresh(t)(t).Audit() })
			})
			t.Run("Confirm", func(t *testing.T) {
				var in instances[confirm.Store]
				storetest.Confirm(t, storetest.ConfirmFactory{
					New: func(t *testing.T) confirm.Store {
						open := b.fresh(t)
						return in.add(open(t).Confirm(), open)
					},
					Reopen: func(t *testing.T, s confirm.Store) confirm.Store { return in.get(s)(t).Confirm() },
				})
			})
			t.Run("Idempotency", func(t *testing.T) {
				var in instances[idempotency.Store]
				storetest.Idempotency(t, storetest.IdempotencyFactory{
					New: func(t *testing.T) idempotency.Store {
						open := b.fresh(t)
						return in.add(open(t).Idempotency(), open)
					},
					Reopen: func(t *testing.T, s idempotency.Store) idempotency.Store { return in.get(s)(t).Idempotency() },
				})
			})
			t.Run("Jobs", func(t *testing.T) {
				var in instances[jobs.Store]
				storetest.Jobs(t, storetest.JobsFactory{
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

// The audit trail refuses updates, on either database.
func TestAuditAppendOnly(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := b.fresh(t)(t)
			ctx := context.Background()
			if err := db.Audit().Write(ctx, audit.Record{ID: "x", Event: "e", Outcome: "ok"}); err != nil {
				t.Fatal(err)
			}
			_, err := db.SQL().ExecContext(ctx, `UPDATE `+sqlstore.AuditTable+` SET outcome = 'unauthorized'`)
			if err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Fatalf("update: %v, want the append-only refusal", err)
			}
		})
	}
}

// The audit trail's indexes are its time order and each user's records,
// on either database, new or brought up from a version that indexed
// agents, capabilities and events too.
func TestAuditIndexes(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			if got := auditIndexes(t, b.fresh(t)(t).SQL()); !slices.Equal(got, []string{"agentcap_audit_at", "agentcap_audit_user"}) {
				t.Errorf("indexes %q", got)
			}
		})
	}
}

// auditIndexes lists the names of the audit table's indexes but its
// primary key's, sorted.
func auditIndexes(t *testing.T, db *sql.DB) []string {
	t.Helper()
	q := `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = '` + sqlstore.AuditTable + `' AND name NOT LIKE 'sqlite_autoindex_%'`
	if _, err := db.Exec(`SELECT 1 FROM sqlite_master LIMIT 1`); err != nil {
		q = `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = '` + sqlstore.AuditTable + `' AND indexname NOT LIKE '%_pkey'`
	}
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// Sweep deletes forgotten confirmation tokens and expired idempotency
// keys, and only those.
func TestSweep(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := b.fresh(t)(t)
			ctx := context.Background()
			past, later := time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
			for id, forget := range map[string]time.Time{"old": past, "live": later} {
				if err := db.Confirm().Put(ctx, id, confirm.Record{Subject: "s", ExpiresAt: forget}, forget); err != nil {
					t.Fatal(err)
				}
			}
			if n, err := db.Confirm().Sweep(ctx); n != 1 || err != nil {
				t.Errorf("tokens swept: %d, %v; want 1", n, err)
			}
			for key, lease := range map[string]time.Duration{"old": time.Millisecond, "live": time.Hour} {
				if ok, _, err := db.Idempotency().Claim(ctx, "agt_1", key, "fp", "tok", lease, 0); !ok || err != nil {
					t.Fatalf("claim %s: %v %v", key, ok, err)
				}
			}
			time.Sleep(5 * time.Millisecond)
			if n, err := db.Idempotency().Sweep(ctx); n != 1 || err != nil {
				t.Errorf("keys swept: %d, %v; want 1", n, err)
			}
		})
	}
}

// OpenPostgres owns its pool: Close closes it.
func TestOpenPostgres(t *testing.T) {
	// Open in the test's own schema, named in the DSN.
	var schema string
	if err := servicetest.PostgresSchema(t)().QueryRow(context.Background(), `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	dsn := servicetest.PostgresDSN(t)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	ctx := context.Background()
	db, err := sqlstore.OpenPostgres(ctx, dsn+sep+"search_path="+schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Audit().Write(ctx, audit.Record{Event: "e", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	checkVersions(t, db.SQL())
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Audit().Query(ctx, audit.Query{}); err == nil {
		t.Error("query after Close succeeded")
	}
}

// BenchmarkProvider runs the provider store's benchmarks on each backend.
func BenchmarkProvider(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			storetest.BenchProvider(b, func(b *testing.B) store.Store { return be.fresh(b)(b).Provider() })
		})
	}
}
