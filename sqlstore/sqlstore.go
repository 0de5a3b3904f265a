// Package sqlstore keeps every store of agentcap (the Agent Auth
// provider's records, the audit trail, confirmation tokens, idempotency
// keys and jobs) in one SQL database, SQLite or PostgreSQL, from one set
// of migrations.
//
// An application opens one DB and hands its stores to the features:
//
//	db, err := sqlstore.OpenSQLite(ctx, "agentcap.db")
//	...
//	defer db.Close()
//	runner, err := jobs.New(jobs.Config{Store: db.Jobs()})
//
// Each feature still sees only its own interface (store.Store of
// agentauth/store, audit.Store, confirm.Store, idempotency.Store,
// jobs.Store).
//
// The schema is brought up to date when the DB is opened, in one
// transaction (under advisory locks on PostgreSQL, so that instances
// starting together migrate once); the versions applied are recorded in
// agentcap_store_migrations. The tables keep the names the per-feature
// packages of earlier releases (agentauth/store/sqlitestore,
// audit/sqlitestore, jobs/pgstore, ...) gave them, and a database those
// packages created is adopted as it is: what it holds already is
// recorded, not created again.
//
// Several instances may share a PostgreSQL database. Each reads the
// agent and host of every verified request from it, unless all of them
// move one count of changes (DB.SetChanges, with redisstore's Changes):
// each then keeps what it reads for as long as no instance has written
// since. See docs/storage.md.
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

	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/internal/sqlutil"
	"github.com/agentcap/agentcap/jobs"
)

// DB is one SQL database holding every store. Its methods are safe for
// concurrent use.
type DB struct {
	db       *sql.DB
	d        *dialect
	close    func() error
	provider *providerStore
	audit    *auditStore
	confirm  *ConfirmStore
	idem     *IdempotencyStore
	jobs     *jobsStore
}

var (
	_ store.Store           = (*providerStore)(nil)
	_ store.AgentHostReader = (*providerStore)(nil)
	_ audit.Store           = (*auditStore)(nil)
	_ confirm.Store         = (*ConfirmStore)(nil)
	_ idempotency.Store     = (*IdempotencyStore)(nil)
	_ jobs.Store            = (*jobsStore)(nil)
)

// sqliteMaxOpenConns bounds the connections of a file OpenSQLite opens:
// write-ahead-log readers run in parallel, and writers are serialized
// anyway. One more than the idle connections the pool keeps
// (sqlutil.SQLiteConns) is the audit trail's, kept for its commits.
const sqliteMaxOpenConns = sqlutil.SQLiteConns + 1

// OpenSQLite opens (creating if needed) the SQLite file at path, a plain
// file path (not a "file:" URI, not ":memory:", without "?"), in
// write-ahead-log mode with foreign keys enforced, and brings its schema
// up to date. The file may hold other tables of the application. Close
// closes it.
func OpenSQLite(ctx context.Context, path string) (*DB, error) {
	dsn, err := sqliteDSN(path)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %w", err)
	}
	s, err := openSQLite(ctx, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// sqliteDSN checks path and returns the DSN OpenSQLite opens it with: the
// SQLite stores' shared one (sqlutil.SQLiteDSN), with foreign keys
// enforced, on which the provider's records rely.
func sqliteDSN(path string) (string, error) {
	dsn, err := sqlutil.SQLiteDSN(path)
	if err != nil {
		return "", fmt.Errorf("sqlstore: %w", err)
	}
	return dsn + "&_pragma=foreign_keys(1)", nil
}

// openSQLite is OpenSQLite on the handle db, opened with sqliteDSN: it
// sets up db's pool and returns a DB whose Close closes db.
func openSQLite(ctx context.Context, db *sql.DB) (*DB, error) {
	db.SetMaxOpenConns(sqliteMaxOpenConns)
	sqlutil.SQLitePool(db)
	s, err := open(ctx, db, sqliteDialect, db.Close)
	if err != nil {
		return nil, err
	}
	// The pool is the DB's own: one of its connections can be kept for
	// the audit trail's commits.
	if err := s.audit.pinWriter(ctx); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// NewSQLite returns a DB on db, an SQLite handle the application already
// holds (opened with the "sqlite" driver), after bringing its schema up
// to date. The provider's records rely on foreign keys: db's DSN should
// enforce them (_pragma=foreign_keys(1)), as OpenSQLite's does. db stays
// the caller's: Close does not close it.
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
		provider: newProviderStore(db, d.provider),
		audit:    newAuditStore(db, d),
		confirm:  newConfirmStore(db, d),
		idem:     newIdempotencyStore(db, d),
		jobs:     newJobsStore(db, d),
	}, nil
}

// Provider returns the Agent Auth provider's records, for
// provider.Config.Store (and, as a directory, for a verifier). Its Close
// does nothing: DB.Close releases what it uses.
func (s *DB) Provider() store.Store { return s.provider }

// SetClock makes the stores read the present from now instead of
// time.Now: the audit trail for the times of records written without
// one, the provider's records for their bookkeeping times (created_at
// when left zero, updated_at) and the present that expiry is compared
// with. It is meant for tests, and must be called before the stores are
// first used; nil keeps time.Now.
func (s *DB) SetClock(now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	s.provider.withClock(now)
	s.audit.now = now
}

// Changes is a count of the writes to the provider's records, kept where
// every instance serving the same database reads it, such as
// redisstore's Changes. See DB.SetChanges.
type Changes interface {
	// Count returns the count now.
	Count(ctx context.Context) (uint64, error)
	// Add moves the count on.
	Add(ctx context.Context) error
}

// SetChanges makes the provider's records keep the agents and hosts they
// read by id in memory, on a database that several instances share: a
// kept record answers a later read while c's count is where it was
// before the record was read, and for at most a second. Every write of
// the provider's records moves c on after its commit, except a touch
// that leaves the agent's status as it was (its clocks only move on, and
// an agent whose cached deadline has passed is read again). A verified
// request then reads c once instead of reading its agent and host from
// the database; the provider's session checks do not even do that: they
// are served the kept agent and host at once, and c is compared with the
// value those were read at when the token's id is recorded (in the same
// Redis script, when c is the Changes of the replay cache's
// redisstore.Store). If c cannot be read, the records are read from the
// database; if c cannot be moved on after a commit, the write reports
// an error, since the other instances may serve the records it replaced
// until their copies are a second old.
//
// Every instance writing to the database must be given a Changes on the
// same count: the writes of one that is not move no count, and the
// others serve what it replaced for up to a second. An SQLite file
// already keeps its records in memory for the one process that serves
// it; c makes the writes of other processes seen at once. Call
// SetChanges before the stores are first used.
func (s *DB) SetChanges(c Changes) {
	p := s.provider
	p.changes = c
	switch {
	case c != nil && p.cache == nil:
		p.cache = newReadCache()
	case c == nil && !p.d.CacheReads:
		p.cache = nil
	}
}

// Audit returns the audit trail.
func (s *DB) Audit() audit.Store { return s.audit }

// Confirm returns the confirmation tokens.
func (s *DB) Confirm() *ConfirmStore { return s.confirm }

// Idempotency returns the idempotency keys.
func (s *DB) Idempotency() *IdempotencyStore { return s.idem }

// Jobs returns the job records.
func (s *DB) Jobs() jobs.Store { return s.jobs }

// SQL returns the database handle, for the application's own tables and
// for inspection; the DB keeps owning it.
func (s *DB) SQL() *sql.DB { return s.db }

// Close closes the prepared statements of the provider's records and of
// the audit store and gives back the audit store's connection, then
// closes the database when the DB opened it.
func (s *DB) Close() error {
	err := errors.Join(s.provider.stmts.Close(), s.audit.stmts.Close(), s.audit.closeWriter())
	if s.close != nil {
		err = errors.Join(err, s.close())
	}
	return err
}
