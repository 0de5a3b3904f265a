// Package pgstore keeps confirmation tokens (package confirm) in
// PostgreSQL, shared by every instance of an application using the same
// database. Forgotten tokens are ignored; Sweep deletes them.
//
// The table, agentcap_confirmations, lives in the connection's current
// schema (search_path). It is created at New, under a transaction-scoped
// advisory lock so that instances starting together create it once.
package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentcap/agentcap/confirm"
	sqlstore "github.com/agentcap/agentcap/internal/sqlstores/confirmsql"
	"github.com/agentcap/agentcap/internal/sqlutil"
)

// Table is the name of the table holding the tokens.
const Table = "agentcap_confirmations"

// Store is a confirm.Store in PostgreSQL.
type Store struct {
	*sqlstore.Store
}

var _ confirm.Store = (*Store)(nil)

var dialect = &sqlstore.Dialect{
	Table:    Table,
	Numbered: true,
	Lock:     sqlutil.PostgresLock("agentcap.confirm.schema"),
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
