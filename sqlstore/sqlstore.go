// Package sqlstore keeps every store of the executor side (the audit
// trail, confirmation tokens, idempotency keys and jobs) in one SQL
// database, SQLite or PostgreSQL, from one set of migrations.
//
// An application opens one DB and hands its stores to the features:
//
//	db, err := sqlstore.OpenSQLite(ctx, "agentcap.db")
//	...
//	defer db.Close()
//	runner, err := jobs.New(jobs.Config{Store: db.Jobs()})
//
// Each feature still sees only its own interface (audit.Store,
// confirm.Store, idempotency.Store, jobs.Store).
//
// The schema is brought up to date when the DB is opened, in one
// transaction (under advisory locks on PostgreSQL, so that instances
// starting together migrate once); the versions applied are recorded in
// agentcap_store_migrations. The tables keep the names the per-feature
// packages of earlier releases (audit/sqlitestore, jobs/pgstore, ...)
// gave them, and a database those packages created is adopted as it is:
// what it holds already is recorded, not created again. See
// docs/storage.md.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/internal/sqlutil"
	"github.com/agentcap/agentcap/jobs"
)

// DB is one SQL database holding every store. Its methods are safe for
// concurrent use.
type DB struct {
	db      *sql.DB
	d       *dialect
	close   func() error
	audit   *AuditStore
	confirm *ConfirmStore
	idem    *IdempotencyStore
	jobs    *JobsStore
}

var (
	_ audit.Store       = (*AuditStore)(nil)
	_ confirm.Store     = (*ConfirmStore)(nil)
	_ idempotency.Store = (*IdempotencyStore)(nil)
	_ jobs.Store        = (*JobsStore)(nil)
)

// OpenSQLite opens (creating if needed) the SQLite file at path, a plain
// file path, in write-ahead-log mode, and brings its schema up to date.
// The file may hold other tables of the application (the provider
// store's, say). Close closes it.
func OpenSQLite(ctx context.Context, path string) (*DB, error) {
	dsn, err := sqlutil.SQLiteDSN(path)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %w", err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %w", err)
	}
	sqlutil.SQLitePool(db)
	s, err := open(ctx, db, sqliteDialect, db.Close)
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// NewSQLite returns a DB on db, an SQLite handle the application already
// holds (opened with the "sqlite" driver, as the provider store's DB()
// is), after bringing its schema up to date. db stays the caller's:
// Close does not close it.
func NewSQLite(ctx context.Context, db *sql.DB) (*DB, error) {
	if db == nil {
		return nil, errors.New("sqlstore: nil db")
	}
	return open(ctx, db, sqliteDialect, nil)
}

// NewPostgres returns a DB on pool, after bringing the schema of the
// connection's current schema (search_path) up to date. The pool stays
// the caller's: Close does not close it.
func NewPostgres(ctx context.Context, pool *pgxpool.Pool) (*DB, error) {
	if pool == nil {
		return nil, errors.New("sqlstore: nil pool")
	}
	db := stdlib.OpenDBFromPool(pool)
	s, err := open(ctx, db, postgresDialect, db.Close)
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// OpenPostgres connects to the database named by dsn and returns a DB
// that owns the pool: Close closes it.
func OpenPostgres(ctx context.Context, dsn string) (*DB, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %w", err)
	}
	s, err := NewPostgres(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	closeDB := s.close
	s.close = func() error {
		err := closeDB()
		pool.Close()
		return err
	}
	return s, nil
}

func open(ctx context.Context, db *sql.DB, d *dialect, close func() error) (*DB, error) {
	if err := migrate(ctx, db, d, time.Now()); err != nil {
		return nil, err
	}
	return &DB{
		db: db, d: d, close: close,
		audit:   newAuditStore(db, d),
		confirm: newConfirmStore(db, d),
		idem:    newIdempotencyStore(db, d),
		jobs:    newJobsStore(db, d),
	}, nil
}

// Audit returns the audit trail.
func (s *DB) Audit() *AuditStore { return s.audit }

// Confirm returns the confirmation tokens.
func (s *DB) Confirm() *ConfirmStore { return s.confirm }

// Idempotency returns the idempotency keys.
func (s *DB) Idempotency() *IdempotencyStore { return s.idem }

// Jobs returns the job records.
func (s *DB) Jobs() *JobsStore { return s.jobs }

// SQL returns the database handle, for the application's own tables and
// for inspection; the DB keeps owning it.
func (s *DB) SQL() *sql.DB { return s.db }

// Close closes the audit store's prepared statements, then the database
// when the DB opened it.
func (s *DB) Close() error {
	err := s.audit.stmts.Close()
	if s.close != nil {
		err = errors.Join(err, s.close())
	}
	return err
}
