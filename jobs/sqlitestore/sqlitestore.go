// Package sqlitestore keeps job records (package jobs) in an SQLite file,
// where they survive a restart of the process: finished results stay
// readable, and jobs that were running are declared lost once their lease
// runs out. Several processes may share the file on one machine.
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	sqlstore "github.com/agentcap/agentcap/internal/sqlstores/jobsql"
	"github.com/agentcap/agentcap/internal/sqlutil"
	"github.com/agentcap/agentcap/jobs"
)

// Table is the name of the table holding the jobs.
const Table = "agentcap_jobs"

// BusyTimeout is how long a write waits for another connection's.
const BusyTimeout = sqlutil.SQLiteBusyTimeout

// Store is a jobs.Store in SQLite.
type Store struct {
	*sqlstore.Store
}

var _ jobs.Store = (*Store)(nil)

var dialect = &sqlstore.Dialect{
	Table: Table,
	IsUnique: func(err error) bool {
		var se *sqlite.Error
		return errors.As(err, &se) && (se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE)
	},
}

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
	s, err := sqlstore.Open(ctx, db, dialect, db.Close)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Store{Store: s}, nil
}
