// Package pgstore keeps the Agent Auth provider state (package store) in
// PostgreSQL, for applications that run on more than one machine.
//
// Every write is one transaction at READ COMMITTED that locks the rows it
// decides on (SELECT ... FOR UPDATE), so compare-and-set transitions and
// grant updates are atomic across every instance sharing the database.
// Migrations run at New under a transaction-scoped advisory lock, so
// instances starting together apply them once.
//
// The tables live in the connection's current schema (search_path), all
// named agentauth_*, next to the application's own.
package pgstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/agentauth/store/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is a store.Store in PostgreSQL.
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
		Name:         "postgres",
		Numbered:     true,
		ForUpdate:    " FOR UPDATE",
		ForShare:     " FOR SHARE",
		IsUnique:     func(err error) bool { return pgCode(err, "23505") },
		IsForeignKey: func(err error) bool { return pgCode(err, "23503") },
		LockMigrations: func(ctx context.Context, tx *sql.Tx) error {
			// One lock per schema: stores in different schemas of one
			// database migrate independently.
			_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('agentcap.agentauth.migrate.' || current_schema()))`)
			return err
		},
		Migrations: sub,
	}
}()

func pgCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// New returns a Store on pool, after applying any migrations the database
// has not seen. The pool stays the caller's: Close does not close it.
func New(ctx context.Context, pool *pgxpool.Pool) (*Store, error) {
	if pool == nil {
		return nil, errors.New("pgstore: nil pool")
	}
	db := stdlib.OpenDBFromPool(pool)
	if err := sqlstore.Migrate(ctx, db, dialect); err != nil {
		db.Close()
		return nil, err
	}
	return &Store{Store: sqlstore.New(db, dialect, db.Close)}, nil
}

// Open connects to the database named by dsn (a URL or key=value
// connection string) and returns a Store that owns the pool: Close closes
// it.
func Open(ctx context.Context, dsn string) (*Store, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	s, err := New(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	db := s.DB()
	s.Store = sqlstore.New(db, dialect, func() error {
		err := db.Close()
		pool.Close()
		return err
	})
	return s, nil
}

// WithClock makes s read bookkeeping times (created_at when left zero,
// updated_at, and the present that the directory compares expiry with)
// from now instead of time.Now, and returns s. It must be called before s
// is first used.
func (s *Store) WithClock(now func() time.Time) *Store {
	s.SetClock(now)
	return s
}
