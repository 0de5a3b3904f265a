package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentcap/agentcap/idempotency"
)

// IdempotencyStore holds idempotency keys (idempotency.Store): one
// table, expiry as Unix milliseconds, claims by one INSERT ... ON
// CONFLICT DO UPDATE that only takes over an expired row, so that the
// database decides which of several instances claims a key, and that
// counts the scope's live keys in the same statement when they are
// bounded. Sweep deletes the expired ones.
type IdempotencyStore struct {
	db  *sql.DB
	now func() time.Time

	claim, claimBounded, count, get, complete, release, sweep string
}

// idempotencyVersions are the versions of the keys' schema: the table,
// then the scope of each key, so that a scope's live keys can be counted
// (keys stored before it have the empty scope, and are not counted).
var idempotencyVersions = [][]string{
	{`CREATE TABLE IF NOT EXISTS ` + idempotencyTable + ` (
	idem_key TEXT PRIMARY KEY,
	fingerprint TEXT NOT NULL,
	token TEXT NOT NULL,
	done INTEGER NOT NULL,
	status INTEGER NOT NULL,
	header TEXT,
	body TEXT,
	expires_at BIGINT NOT NULL
)`,
		`CREATE INDEX IF NOT EXISTS ` + idempotencyTable + `_expires ON ` + idempotencyTable + ` (expires_at)`},
	{`ALTER TABLE ` + idempotencyTable + ` ADD COLUMN scope TEXT NOT NULL DEFAULT ''`,
		`CREATE INDEX IF NOT EXISTS ` + idempotencyTable + `_scope ON ` + idempotencyTable + ` (scope, expires_at)`},
}

// newIdempotencyStore returns the idempotency keys on db, whose schema
// is up to date.
func newIdempotencyStore(db *sql.DB, d *dialect) *IdempotencyStore {
	t, q := idempotencyTable, d.q
	const upsert = `
ON CONFLICT (idem_key) DO UPDATE SET scope = excluded.scope, fingerprint = excluded.fingerprint, token = excluded.token, done = 0, status = 0, header = NULL, body = NULL, expires_at = excluded.expires_at
WHERE `
	return &IdempotencyStore{
		db: db, now: time.Now,
		claim: q(`INSERT INTO ` + t + ` (idem_key, scope, fingerprint, token, done, status, header, body, expires_at) VALUES (?, ?, ?, ?, 0, 0, NULL, NULL, ?)` +
			upsert + t + `.expires_at <= ?`),
		// The same, unless the scope holds max live keys: counted in the
		// statement, so that the count and the insert are one step.
		claimBounded: q(`INSERT INTO ` + t + ` (idem_key, scope, fingerprint, token, done, status, header, body, expires_at)
SELECT CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), 0, 0, NULL, NULL, CAST(? AS BIGINT)
WHERE (SELECT COUNT(*) FROM (SELECT 1 FROM ` + t + ` WHERE scope = ? AND expires_at > ? LIMIT ?) AS held) < ?` +
			upsert + t + `.expires_at <= ?`),
		count:    q(`SELECT COUNT(*) FROM (SELECT 1 FROM ` + t + ` WHERE scope = ? AND expires_at > ? LIMIT ?) AS held`),
		get:      q(`SELECT fingerprint, token, done, status, header, body FROM ` + t + ` WHERE idem_key = ? AND expires_at > ?`),
		complete: q(`UPDATE ` + t + ` SET done = 1, status = ?, header = ?, body = ?, expires_at = ? WHERE idem_key = ? AND token = ? AND done = 0 AND expires_at > ?`),
		release:  q(`DELETE FROM ` + t + ` WHERE idem_key = ? AND token = ? AND done = 0`),
		sweep:    q(`DELETE FROM ` + t + ` WHERE expires_at <= ?`),
	}
}

// Close does nothing: the store's resources are the DB's.
func (*IdempotencyStore) Close() error { return nil }

// Claim implements idempotency.Store. A key that expired between the
// failed claim and the read is claimed again.
func (s *IdempotencyStore) Claim(ctx context.Context, scope, key, fingerprint, token string, lease time.Duration, max int) (bool, *idempotency.Record, error) {
	for range 3 {
		now := s.now()
		var (
			res sql.Result
			err error
		)
		if max > 0 {
			res, err = s.db.ExecContext(ctx, s.claimBounded, key, scope, fingerprint, token, now.Add(lease).UnixMilli(),
				scope, now.UnixMilli(), max, max, now.UnixMilli())
		} else {
			res, err = s.db.ExecContext(ctx, s.claim, key, scope, fingerprint, token, now.Add(lease).UnixMilli(), now.UnixMilli())
		}
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
			if max > 0 {
				// Not held: refused for the bound, unless a key of the
				// scope expired in between.
				var held int
				if err := s.db.QueryRowContext(ctx, s.count, scope, now.UnixMilli(), max).Scan(&held); err != nil {
					return false, nil, fmt.Errorf("counting keys: %w", err)
				}
				if held >= max {
					return false, nil, idempotency.ErrTooManyKeys
				}
			}
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
func (s *IdempotencyStore) Complete(ctx context.Context, _, key, token string, answer idempotency.Record, ttl time.Duration) error {
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
func (s *IdempotencyStore) Release(ctx context.Context, _, key, token string) error {
	if _, err := s.db.ExecContext(ctx, s.release, key, token); err != nil {
		return fmt.Errorf("releasing a key: %w", err)
	}
	return nil
}

// Sweep deletes expired keys and returns how many; expired keys are
// ignored until then, so sweeping only saves room.
func (s *IdempotencyStore) Sweep(ctx context.Context) (int, error) {
	res, err := s.db.ExecContext(ctx, s.sweep, s.now().UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("idempotency: sweeping: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
