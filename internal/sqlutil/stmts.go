package sqlutil

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// Stmts keeps statements prepared on one database, keyed by their query
// text, so that a query run again is not parsed again: each is prepared
// the first time it runs outside a transaction, or by Prepare, and
// database/sql prepares it once on each connection that runs it. In a
// transaction, a query not yet prepared runs unprepared: preparing it
// would take a second connection while the transaction holds one, and
// with the pool's connections all held by transactions waiting for the
// database's single writer, that would wait until they fail; statements
// that run only in transactions are to be prepared ahead with Prepare.
// It is meant for a fixed set of queries (the texts of a store's code),
// not for texts built from data, which would grow it without bound. Safe
// for concurrent use.
//
// Stmts made with prepare false prepare nothing: their methods run the
// query text as database/sql does, for drivers that cache statements
// themselves (pgx). So do they for a query that cannot be prepared, which
// then fails, or not, as it would have unprepared.
type Stmts struct {
	db      *sql.DB
	prepare bool
	mu      sync.RWMutex
	stmts   map[string]*sql.Stmt
	closed  bool
}

// ErrStmtsClosed is returned by Prepared after Close.
var ErrStmtsClosed = errors.New("sqlutil: statements closed")

// NewStmts returns an empty cache of statements on db, which prepares
// them when prepare is set.
func NewStmts(db *sql.DB, prepare bool) *Stmts {
	return &Stmts{db: db, prepare: prepare, stmts: map[string]*sql.Stmt{}}
}

// Prepared returns query prepared on the database, preparing it on its
// first use; ctx bounds the preparation only.
func (c *Stmts) Prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.RLock()
	st, closed := c.stmts[query], c.closed
	c.mu.RUnlock()
	switch {
	case st != nil:
		return st, nil
	case closed:
		return nil, ErrStmtsClosed
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	other, closed := c.stmts[query], c.closed
	if !closed && other == nil {
		c.stmts[query] = st
	}
	c.mu.Unlock()
	// A statement is closed outside the lock: closing it waits for each
	// connection it was prepared on, one of which may be running a write
	// that waits for a transaction that itself waits for the lock.
	switch {
	case closed:
		_ = st.Close()
		return nil, ErrStmtsClosed
	case other != nil:
		// Prepared meanwhile by another caller: keep one.
		_ = st.Close()
		return other, nil
	}
	return st, nil
}

// Prepare prepares queries ahead of their first use, when c prepares
// statements at all.
func (c *Stmts) Prepare(ctx context.Context, queries ...string) error {
	if !c.prepare {
		return nil
	}
	for _, q := range queries {
		if _, err := c.Prepared(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// stmt returns query's statement in tx (on the database when tx is nil),
// or nil when it is to run unprepared.
func (c *Stmts) stmt(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	if !c.prepare {
		return nil
	}
	if tx != nil {
		c.mu.RLock()
		st := c.stmts[query]
		c.mu.RUnlock()
		if st == nil {
			return nil
		}
		// Closed with the transaction; st stays prepared.
		return tx.StmtContext(ctx, st)
	}
	st, err := c.Prepared(ctx, query)
	if err != nil {
		return nil
	}
	return st
}

// Exec runs query in tx, or on the database when tx is nil, through its
// prepared statement.
func (c *Stmts) Exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := c.stmt(ctx, tx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	if tx != nil {
		return tx.ExecContext(ctx, query, args...)
	}
	return c.db.ExecContext(ctx, query, args...)
}

// Query is Exec for a query that returns rows.
func (c *Stmts) Query(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if st := c.stmt(ctx, tx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	if tx != nil {
		return tx.QueryContext(ctx, query, args...)
	}
	return c.db.QueryContext(ctx, query, args...)
}

// QueryRow is Exec for a query that returns at most one row.
func (c *Stmts) QueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if st := c.stmt(ctx, tx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	if tx != nil {
		return tx.QueryRowContext(ctx, query, args...)
	}
	return c.db.QueryRowContext(ctx, query, args...)
}

// Len reports how many statements are prepared.
func (c *Stmts) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.stmts)
}

// Close closes the statements (one running at that moment may fail) and
// makes later queries run unprepared, on a database usually closed too.
// It does not close the database.
func (c *Stmts) Close() error {
	c.mu.Lock()
	c.closed = true
	stmts := c.stmts
	c.stmts = map[string]*sql.Stmt{}
	c.mu.Unlock()
	// Closed outside the lock, as in Prepared.
	var errs []error
	for _, st := range stmts {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}
