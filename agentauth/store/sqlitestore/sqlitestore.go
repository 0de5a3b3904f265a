// Package sqlitestore keeps the Agent Auth provider state (package store)
// in an SQLite database file: the embedded default, with no server to
// run. It uses the pure-Go modernc.org/sqlite driver, so it needs no C
// toolchain.
//
// The database is opened in WAL mode, so readers never wait for the
// writer, with foreign keys enforced and a busy timeout for writers of
// other processes. Within one process, write transactions queue on a
// mutex and begin IMMEDIATE, so concurrent writers never fail busy.
package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/agentauth/store/internal/sqlstore"
	"github.com/agentcap/agentcap/internal/sqlutil"
)

//go:embed migrations/*.sql
var migrations embed.FS

// maxOpenConns bounds the connections: WAL readers run in parallel, and
// writers are serialized anyway.
const maxOpenConns = 8

// BusyTimeout is how long a writer waits for another process's write
// transaction before failing.
const BusyTimeout = sqlutil.SQLiteBusyTimeout

// Store is a store.Store in an SQLite file.
type Store struct {
	*sqlstore.Store
}

var _ store.Store = (*Store)(nil)

var dialect = func() *sqlstore.Dialect {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		panic(err)
	}
	return &sqlstore.Dialect{
		Name:              "sqlite",
		UnixMicroTimes:    true,
		SerializeWrites:   true,
		PrepareStatements: true,
		DetachReads:       true,
		IsUnique: func(err error) bool {
			return sqliteCode(err, sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
		},
		IsForeignKey: func(err error) bool { return sqliteCode(err, sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY) },
		Migrations:   sub,
	}
}()

func sqliteCode(err error, codes ...int) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	for _, c := range codes {
		if se.Code() == c {
			return true
		}
	}
	return false
}

// Open opens (creating it if needed) the SQLite database at path and
// applies any migrations it has not seen. path is a file name: not a
// "file:" URI, not ":memory:" (each connection would get a database of
// its own), and without "?".
func Open(ctx context.Context, path string) (*Store, error) {
	dsn, err := dsnOf(path)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	s, err := onDB(ctx, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// dsnOf checks path and returns the DSN that opens it: the SQLite
// stores' own (sqlutil.SQLiteDSN), with foreign keys enforced.
func dsnOf(path string) (string, error) {
	dsn, err := sqlutil.SQLiteDSN(path)
	if err != nil {
		return "", fmt.Errorf("sqlitestore: %w", err)
	}
	return dsn + "&_pragma=foreign_keys(1)", nil
}

// onDB sets up db's pool, migrates it and returns a Store whose Close
// closes db.
func onDB(ctx context.Context, db *sql.DB) (*Store, error) {
	db.SetMaxOpenConns(maxOpenConns)
	sqlutil.SQLitePool(db)
	if err := sqlstore.Migrate(ctx, db, dialect); err != nil {
		return nil, err
	}
	return &Store{Store: sqlstore.New(db, dialect, db.Close)}, nil
}

// WithClock makes s read bookkeeping times (created_at when left zero,
// updated_at, and the present that the directory compares expiry with)
// from now instead of time.Now, and returns s. It must be called before s
// is first used.
func (s *Store) WithClock(now func() time.Time) *Store {
	s.SetClock(now)
	return s
}
