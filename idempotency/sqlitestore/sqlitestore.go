// Package sqlitestore keeps idempotency keys (package idempotency) in an
// SQLite file, shared by the processes of one machine and kept across
// restarts. Expired keys are ignored; Sweep deletes them.
package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/agentcap/agentcap/idempotency"
	sqlstore "github.com/agentcap/agentcap/internal/sqlstores/idemsql"
	"github.com/agentcap/agentcap/internal/sqlutil"
)

// Table is the name of the table holding the keys.
const Table = "agentcap_idempotency"

// BusyTimeout is how long a write waits for another connection's.
const BusyTimeout = sqlutil.SQLiteBusyTimeout

// Store is an idempotency.Store in SQLite.
type Store struct {
	*sqlstore.Store
}

var _ idempotency.Store = (*Store)(nil)

// Open opens (creating if needed) the SQLite file at path, which may be
// the file an application already uses for other tables. Close closes it.
func Open(ctx context.Context, path string) (*Store, error) {
	dsn, err := sqlutil.SQLiteDSN(path)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	sqlutil.SQLitePool(db)
	s, err := sqlstore.Open(ctx, db, &sqlstore.Dialect{Table: Table}, db.Close)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Store{Store: s}, nil
}
