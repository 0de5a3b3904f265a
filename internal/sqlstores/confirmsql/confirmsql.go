// Package confirmsql is the confirm.Store shared by the SQLite and
// PostgreSQL stores: one table, times as Unix milliseconds, and
// consumption by one conditional UPDATE, so that the database decides
// which of several instances spends a token.
package confirmsql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/internal/sqlutil"
)

// Dialect is what differs between databases.
type Dialect struct {
	// Numbered placeholders ($1) instead of ?.
	Numbered bool
	// Lock, when set, serializes schema creation across instances.
	Lock func(ctx context.Context, tx *sql.Tx) error
	// Table is the table name.
	Table string
}

// Store is a confirm.Store on a database/sql handle.
type Store struct {
	db    *sql.DB
	close func() error

	put, consume, get, sweep string
}

var _ confirm.Store = (*Store)(nil)

// Open creates the table if needed and returns a Store; close, if set, is
// what Close calls.
func Open(ctx context.Context, db *sql.DB, d *Dialect, close func() error) (*Store, error) {
	if err := sqlutil.CreateSchema(ctx, db, d.Lock, Schema(d.Table)); err != nil {
		return nil, fmt.Errorf("confirm: %w", err)
	}
	return New(db, d, close), nil
}

// Schema returns the statements creating table and its index, if they
// do not exist.
func Schema(t string) []string {
	return []string{
		`CREATE TABLE IF NOT EXISTS ` + t + ` (
	id TEXT PRIMARY KEY,
	subject TEXT NOT NULL,
	capability TEXT NOT NULL,
	digest TEXT NOT NULL,
	audience TEXT NOT NULL,
	expires_at BIGINT NOT NULL,
	forget_at BIGINT NOT NULL,
	used INTEGER NOT NULL
)`,
		`CREATE INDEX IF NOT EXISTS ` + t + `_forget ON ` + t + ` (forget_at)`,
	}
}

// New returns a Store on a database that holds the table already (d.Lock
// is not used); close, if set, is what Close calls.
func New(db *sql.DB, d *Dialect, close func() error) *Store {
	t := d.Table
	q := func(s string) string {
		if d.Numbered {
			return sqlutil.Number(s)
		}
		return s
	}
	return &Store{
		db: db, close: close,
		put: q(`INSERT INTO ` + t + ` (id, subject, capability, digest, audience, expires_at, forget_at, used) VALUES (?, ?, ?, ?, ?, ?, ?, 0)`),
		consume: q(`UPDATE ` + t + ` SET used = 1 WHERE id = ? AND used = 0 AND subject = ? AND capability = ? AND digest = ? AND audience = ?
AND expires_at > ? AND forget_at > ? RETURNING expires_at`),
		get:   q(`SELECT subject, capability, digest, audience, expires_at, used FROM ` + t + ` WHERE id = ? AND forget_at > ?`),
		sweep: q(`DELETE FROM ` + t + ` WHERE forget_at <= ?`),
	}
}

// Close closes what Open was given to close.
func (s *Store) Close() error {
	if s.close == nil {
		return nil
	}
	return s.close()
}

// Put implements confirm.Store.
func (s *Store) Put(ctx context.Context, id string, rec confirm.Record, forget time.Time) error {
	if _, err := s.db.ExecContext(ctx, s.put, id, rec.Subject, rec.Capability, rec.Digest, rec.Audience,
		rec.ExpiresAt.UnixMilli(), forget.UnixMilli()); err != nil {
		return fmt.Errorf("recording a token: %w", err)
	}
	return nil
}

// Consume implements confirm.Store.
func (s *Store) Consume(ctx context.Context, id string, want confirm.Record, now time.Time) (*confirm.Record, bool, error) {
	at := now.UnixMilli()
	var expires int64
	err := s.db.QueryRowContext(ctx, s.consume, id, want.Subject, want.Capability, want.Digest, want.Audience, at, at).Scan(&expires)
	if err == nil {
		rec := want
		rec.ExpiresAt = time.UnixMilli(expires)
		return &rec, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, false, fmt.Errorf("consuming a token: %w", err)
	}
	var (
		rec  confirm.Record
		used int
	)
	err = s.db.QueryRowContext(ctx, s.get, id, at).Scan(&rec.Subject, &rec.Capability, &rec.Digest, &rec.Audience, &expires, &used)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("reading a token: %w", err)
	}
	rec.ExpiresAt = time.UnixMilli(expires)
	rec.Used = used == 1
	return &rec, false, nil
}

// Sweep deletes the tokens that are forgotten and returns how many; they
// are ignored until then, so sweeping only saves room.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	res, err := s.db.ExecContext(ctx, s.sweep, time.Now().UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("confirm: sweeping: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
