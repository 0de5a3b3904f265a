// Package sqlitestore keeps the audit trail (package audit) in SQLite,
// in a file of its own or in the database an application already uses,
// such as the one holding the provider's records (sqlstore).
//
// The table, agentcap_audit, is created and migrated when the store is
// opened; the versions applied are recorded in agentcap_audit_migrations,
// apart from the provider store's own migrations table, so that either
// can move on without the other. A trigger refuses every UPDATE: records
// are only ever appended, and deleted by age by Sweep.
//
// SQLite has one writer at a time, so the Store commits the records of
// concurrent Writes together (group commit): a Write that finds no
// commit under way writes its record at once; the records that arrive
// meanwhile queue, and when a commit ends the first of them commits the
// queue's next group, at most 256 records, in one transaction. Each
// Write returns once its own record is committed, or with the error that
// kept it from being (a record whose id is taken fails alone); a record
// is committed whatever becomes of its Write's context once the Write has
// found that context live, whether it is written at once or queued.
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentcap/agentcap/audit"
	sqlstore "github.com/agentcap/agentcap/internal/sqlstores/auditsql"
	"github.com/agentcap/agentcap/internal/sqlutil"
)

// Table is the name of the table holding the records.
const Table = sqlstore.Table

// Store is an audit.Store in SQLite.
type Store struct {
	*sqlstore.Store
}

var _ audit.Store = (*Store)(nil)

var dialect = &sqlstore.Dialect{
	Migrations: [][]string{
		append(append([]string{}, sqlstore.CreateTable...),
			`CREATE TRIGGER `+Table+`_append_only BEFORE UPDATE ON `+Table+` BEGIN SELECT RAISE(ABORT, '`+Table+` is append-only'); END`),
	},
	IsUnique: func(err error) bool {
		var se *sqlite.Error
		return errors.As(err, &se) && (se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE)
	},
	Prepare:     true,
	GroupCommit: true,
}

// Open opens (creating if needed) the SQLite file at path, which may be
// the file an application already uses for other tables. Close closes
// it.
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

// New returns a Store on db, an SQLite handle an application already
// holds (the provider store's DB(), say), after migrating the audit table
// in it. db stays the caller's: Close does not close it.
func New(ctx context.Context, db *sql.DB) (*Store, error) {
	if db == nil {
		return nil, errors.New("sqlitestore: nil db")
	}
	s, err := sqlstore.Open(ctx, db, dialect, nil)
	if err != nil {
		return nil, err
	}
	return &Store{Store: s}, nil
}
