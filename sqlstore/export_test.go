package sqlstore

import (
	"context"
	"database/sql"
	"io/fs"
	"time"

	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
)

// For the tests: the names of two tables and the number of versions.
const (
	MigrationsTable = migrationsTable
	AuditTable      = auditTable
)

var SchemaVersion = len(steps)

// SQLiteDSN is the data source name OpenSQLite opens path with.
func SQLiteDSN(path string) (string, error) { return sqliteDSN(path) }

// OpenSQLiteOn is OpenSQLite on a handle the test opened (through a
// driver of its own) with SQLiteDSN: the same pool settings and
// migrations; Close closes db.
func OpenSQLiteOn(ctx context.Context, db *sql.DB) (*DB, error) { return openSQLite(ctx, db) }

// ProviderSQL returns the provider's migration files for the database
// dir ("sqlite" or "postgres"), oldest first, as the old provider
// packages applied them: their names and texts.
func ProviderSQL(dir string) (names, texts []string) {
	entries, err := fs.ReadDir(providerMigrations, "provider_migrations/"+dir)
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		names = append(names, e.Name())
		texts = append(texts, providerSQL(dir, e.Name()))
	}
	return names, texts
}

// ProviderOn returns the provider's records on db as they are, without
// migrating, reading the present from now: for writing into a schema the
// old packages' SQL built.
func ProviderOn(db *sql.DB, postgres bool, now func() time.Time) store.Store {
	if postgres {
		return newProviderStore(db, postgresProvider).withClock(now)
	}
	return newProviderStore(db, sqliteProvider).withClock(now)
}

// ProviderWithClock sets db's clock and returns its provider's records.
func ProviderWithClock(db *DB, now func() time.Time) store.Store {
	db.SetClock(now)
	return db.Provider()
}

// MarkAuditBusy has db's audit trail take Writes to arrive faster than
// commits end for the next hour: a Write that finds no commit under way
// waits for company.
func MarkAuditBusy(db *DB) {
	g := &db.audit.group
	g.mu.Lock()
	defer g.mu.Unlock()
	g.busyUntil = time.Now().Add(time.Hour)
}

// AuditInsertGroup writes rs as one group commit writes them, all or
// none.
func AuditInsertGroup(ctx context.Context, db *DB, rs ...audit.Record) error {
	batch := make([]*auditPending, len(rs))
	for i, r := range rs {
		r, err := audit.Prepare(r, time.Now())
		if err != nil {
			return err
		}
		batch[i] = &auditPending{r: r}
	}
	return db.audit.insertAll(ctx, batch)
}
