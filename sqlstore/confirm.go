package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentcap/agentcap/confirm"
)

// ConfirmStore holds confirmation tokens (confirm.Store): one table,
// times as Unix milliseconds, and consumption by one conditional UPDATE,
// so that the database decides which of several instances spends a
// token. Sweep deletes the forgotten ones.
type ConfirmStore struct {
	db *sql.DB

	put, consume, get, sweep string
}

// confirmSchema creates the table of confirmation tokens and its index,
// if they do not exist.
var confirmSchema = []string{
	`CREATE TABLE IF NOT EXISTS ` + confirmTable + ` (
	id TEXT PRIMARY KEY,
	subject TEXT NOT NULL,
	capability TEXT NOT NULL,
	digest TEXT NOT NULL,
	audience TEXT NOT NULL,
	expires_at BIGINT NOT NULL,
	forget_at BIGINT NOT NULL,
	used INTEGER NOT NULL
)`,
	`CREATE INDEX IF NOT EXISTS ` + confirmTable + `_forget ON ` + confirmTable + ` (forget_at)`,
}

// newConfirmStore returns the confirmation tokens on db, whose schema is
// up to date.
func newConfirmStore(db *sql.DB, d *dialect) *ConfirmStore {
	return &ConfirmStore{
		db:  db,
		put: d.q(`INSERT INTO ` + confirmTable + ` (id, subject, capability, digest, audience, expires_at, forget_at, used) VALUES (?, ?, ?, ?, ?, ?, ?, 0)`),
		consume: d.q(`UPDATE ` + confirmTable + ` SET used = 1 WHERE id = ? AND used = 0 AND subject = ? AND capability = ? AND digest = ? AND audience = ?
AND expires_at > ? AND forget_at > ? RETURNING expires_at`),
		get:   d.q(`SELECT subject, capability, digest, audience, expires_at, used FROM ` + confirmTable + ` WHERE id = ? AND forget_at > ?`),
		sweep: d.q(`DELETE FROM ` + confirmTable + ` WHERE forget_at <= ?`),
	}
}

// Close does nothing: the store's resources are the DB's.
func (*ConfirmStore) Close() error { return nil }

// Put implements confirm.Store.
func (s *ConfirmStore) Put(ctx context.Context, id string, rec confirm.Record, forget time.Time) error {
	if _, err := s.db.ExecContext(ctx, s.put, id, rec.Subject, rec.Capability, rec.Digest, rec.Audience,
		rec.ExpiresAt.UnixMilli(), forget.UnixMilli()); err != nil {
		return fmt.Errorf("recording a token: %w", err)
	}
	return nil
}

// Consume implements confirm.Store.
func (s *ConfirmStore) Consume(ctx context.Context, id string, want confirm.Record, now time.Time) (*confirm.Record, bool, error) {
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
func (s *ConfirmStore) Sweep(ctx context.Context) (int, error) {
	res, err := s.db.ExecContext(ctx, s.sweep, time.Now().UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("confirm: sweeping: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
