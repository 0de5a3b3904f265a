// Package pgstore keeps the audit trail (package audit) in PostgreSQL,
// shared by every instance of an application, in the database (and the
// pool) the provider's records (sqlstore) already use or in another.
//
// The table, agentcap_audit, lives in the connection's current schema
// (search_path). It is created and migrated at New, under a
// transaction-scoped advisory lock so that instances starting together
// migrate once; the versions applied are recorded in
// agentcap_audit_migrations. A trigger refuses every UPDATE: records are
// only ever appended, and deleted by age by Sweep.
package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentcap/agentcap/audit"
	sqlstore "github.com/agentcap/agentcap/internal/sqlstores/auditsql"
	"github.com/agentcap/agentcap/internal/sqlutil"
)

// Table is the name of the table holding the records.
const Table = sqlstore.Table

// Store is an audit.Store in PostgreSQL.
type Store struct {
	*sqlstore.Store
}

var _ audit.Store = (*Store)(nil)

var dialect = &sqlstore.Dialect{
	Numbered: true,
	Lock:     sqlutil.PostgresLock("agentcap.audit.schema"),
	Migrations: [][]string{
		append(append([]string{}, sqlstore.CreateTable...),
			`CREATE FUNCTION `+Table+`_refuse_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION '`+Table+` is append-only';
END
$$`,
			`CREATE TRIGGER `+Table+`_append_only BEFORE UPDATE ON `+Table+` FOR EACH ROW EXECUTE FUNCTION `+Table+`_refuse_update()`),
	},
	IsUnique: func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == "23505"
	},
}

// New returns a Store on pool, after migrating the audit table. The pool
// stays the caller's: Close does not close it.
func New(ctx context.Context, pool *pgxpool.Pool) (*Store, error) {
	if pool == nil {
		return nil, errors.New("pgstore: nil pool")
	}
	db := stdlib.OpenDBFromPool(pool)
	s, err := sqlstore.Open(ctx, db, dialect, db.Close)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Store{Store: s}, nil
}

// Open connects to the database named by dsn and returns a Store that
// owns the pool: Close closes it.
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
	s.SetCloser(func() error {
		err := db.Close()
		pool.Close()
		return err
	})
	return s, nil
}
