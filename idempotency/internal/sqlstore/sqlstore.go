// Package sqlstore is the idempotency.Store shared by the SQLite and
// PostgreSQL stores: one table, expiry as Unix milliseconds, claims by one
// INSERT ... ON CONFLICT DO UPDATE that only takes over an expired row, so
// that the database decides which of several instances claims a key.
package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentcap/agentcap/idempotency"
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

// Store is an idempotency.Store on a database/sql handle.
type Store struct {
	db    *sql.DB
	close func() error
	now   func() time.Time

	claim, get, complete, release, sweep string
}

var _ idempotency.Store = (*Store)(nil)

// Open creates the table if needed and returns a Store; close, if set, is
// what Close calls.
func Open(ctx context.Context, db *sql.DB, d *Dialect, close func() error) (*Store, error) {
	t := d.Table
	schema := []string{
		`CREATE TABLE IF NOT EXISTS ` + t + ` (
	idem_key TEXT PRIMARY KEY,
	fingerprint TEXT NOT NULL,
	token TEXT NOT NULL,
	done INTEGER NOT NULL,
	status INTEGER NOT NULL,
	header TEXT,
	body TEXT,
	expires_at BIGINT NOT NULL
)`,
		`CREATE INDEX IF NOT EXISTS ` + t + `_expires ON ` + t + ` (expires_at)`,
	}
	if err := sqlutil.CreateSchema(ctx, db, d.Lock, schema); err != nil {
		return nil, fmt.Errorf("idempotency: %w", err)
	}
	q := func(s string) string {
		if d.Numbered {
			return sqlutil.Number(s)
		}
		return s
	}
	return &Store{
		db: db, close: close, now: time.Now,
		claim: q(`INSERT INTO ` + t + ` (idem_key, fingerprint, token, done, status, header, body, expires_at) VALUES (?, ?, ?, 0, 0, NULL, NULL, ?)
ON CONFLICT (idem_key) DO UPDATE SET fingerprint = excluded.fingerprint, token = excluded.token, done = 0, status = 0, header = NULL, body = NULL, expires_at = excluded.expires_at
WHERE ` + t + `.expires_at <= ?`),
		get:      q(`SELECT fingerprint, token, done, status, header, body FROM ` + t + ` WHERE idem_key = ? AND expires_at > ?`),
		complete: q(`UPDATE ` + t + ` SET done = 1, status = ?, header = ?, body = ?, expires_at = ? WHERE idem_key = ? AND token = ? AND done = 0 AND expires_at > ?`),
		release:  q(`DELETE FROM ` + t + ` WHERE idem_key = ? AND token = ? AND done = 0`),
		sweep:    q(`DELETE FROM ` + t + ` WHERE expires_at <= ?`),
	}, nil
}

// Close closes what Open was given to close.
func (s *Store) Close() error {
	if s.close == nil {
		return nil
	}
	return s.close()
}

// Claim implements idempotency.Store. A key that expired between the
// failed claim and the read is claimed again.
func (s *Store) Claim(ctx context.Context, key, fingerprint, token string, lease time.Duration) (bool, *idempotency.Record, error) {
	for range 3 {
		now := s.now()
		res, err := s.db.ExecContext(ctx, s.claim, key, fingerprint, token, now.Add(lease).UnixMilli(), now.UnixMilli())
		if err != nil {
			return false, nil, fmt.Errorf("claiming a key: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return false, nil, fmt.Errorf("claiming a key: %w", err)
		}
		if n == 1 {
			return true, nil, nil
		}
		var (
			rec          idempotency.Record
			done         int
			header, body sql.NullString
		)
		err = s.db.QueryRowContext(ctx, s.get, key, now.UnixMilli()).Scan(&rec.Fingerprint, &rec.Token, &done, &rec.Status, &header, &body)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return false, nil, fmt.Errorf("reading a key: %w", err)
		}
		rec.Done = done == 1
		if header.Valid {
			if err := json.Unmarshal([]byte(header.String), &rec.Header); err != nil {
				return false, nil, fmt.Errorf("decoding a stored header: %w", err)
			}
		}
		if body.Valid {
			rec.Body = []byte(body.String)
		}
		return false, &rec, nil
	}
	return false, nil, errors.New("the key kept changing while it was claimed")
}

// Complete implements idempotency.Store.
func (s *Store) Complete(ctx context.Context, key, token string, answer idempotency.Record, ttl time.Duration) error {
	var header sql.NullString
	if answer.Header != nil {
		b, err := json.Marshal(answer.Header)
		if err != nil {
			return fmt.Errorf("encoding a header: %w", err)
		}
		header = sql.NullString{String: string(b), Valid: true}
	}
	now := s.now()
	if _, err := s.db.ExecContext(ctx, s.complete, answer.Status, header, string(answer.Body), now.Add(ttl).UnixMilli(), key, token, now.UnixMilli()); err != nil {
		return fmt.Errorf("storing an answer: %w", err)
	}
	return nil
}

// Release implements idempotency.Store.
func (s *Store) Release(ctx context.Context, key, token string) error {
	if _, err := s.db.ExecContext(ctx, s.release, key, token); err != nil {
		return fmt.Errorf("releasing a key: %w", err)
	}
	return nil
}

// Sweep deletes expired keys and returns how many; expired keys are
// ignored until then, so sweeping only saves room.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	res, err := s.db.ExecContext(ctx, s.sweep, s.now().UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("idempotency: sweeping: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
