// Package pgstore keeps job records (package jobs) in PostgreSQL, for
// applications that run on more than one machine: a job accepted by one
// instance can be polled and cancelled through any other, and jobs of an
// instance that died are declared lost by the others.
//
// The table, agentcap_jobs, lives in the connection's current schema
// (search_path). It is created at New, under a transaction-scoped
// advisory lock so that instances starting together create it once.
package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	sqlstore "github.com/agentcap/agentcap/internal/sqlstores/jobsql"
	"github.com/agentcap/agentcap/internal/sqlutil"
	"github.com/agentcap/agentcap/jobs"
)

// Table is the name of the table holding the jobs.
const Table = "agentcap_jobs"

// Store is a jobs.Store in PostgreSQL.
type Store struct {
	*sqlstore.Store
}

var _ jobs.Store = (*Store)(nil)

var dialect = &sqlstore.Dialect{
	Table:    Table,
	Numbered: true,
	IsUnique: func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == "23505"
	},
	Lock: sqlutil.PostgresLock("agentcap.jobs.schema"),
}

// New returns a Store on pool, creating its table if needed. The pool
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
