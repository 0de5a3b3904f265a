// Package jobsql is the jobs.Store shared by the SQLite and PostgreSQL
// stores: one table, times as Unix milliseconds, every state change a
// single conditional UPDATE so that the database decides races.
package jobsql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/internal/sqlutil"
	"github.com/agentcap/agentcap/jobs"
)

// Dialect is what differs between databases.
type Dialect struct {
	// Numbered placeholders ($1) instead of ?.
	Numbered bool
	// IsUnique reports a unique-constraint violation.
	IsUnique func(error) bool
	// Lock, when set, serializes schema creation across instances; it
	// runs inside the creating transaction.
	Lock func(ctx context.Context, tx *sql.Tx) error
	// Table is the table name.
	Table string
}

// Store is a jobs.Store on a database/sql handle.
type Store struct {
	db    *sql.DB
	d     *Dialect
	close func() error

	insert, get, finish, progress, renew, expire, sweep, count string
}

var _ jobs.Store = (*Store)(nil)

// Schema returns the statements creating the table and its indexes.
func Schema(table string) []string {
	return []string{
		`CREATE TABLE IF NOT EXISTS ` + table + ` (
	id TEXT PRIMARY KEY,
	owner TEXT NOT NULL,
	capability TEXT NOT NULL,
	state TEXT NOT NULL,
	result TEXT,
	failure TEXT,
	progress TEXT,
	instance TEXT NOT NULL,
	lease_until BIGINT NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	expires_at BIGINT NOT NULL
)`,
		`CREATE INDEX IF NOT EXISTS ` + table + `_lease ON ` + table + ` (state, lease_until)`,
		`CREATE INDEX IF NOT EXISTS ` + table + `_expires ON ` + table + ` (expires_at)`,
		`CREATE INDEX IF NOT EXISTS ` + table + `_owner ON ` + table + ` (owner, state)`,
	}
}

// Open creates the table if needed and returns a Store. close, if set,
// is what Close calls.
func Open(ctx context.Context, db *sql.DB, d *Dialect, close func() error) (*Store, error) {
	if err := sqlutil.CreateSchema(ctx, db, d.Lock, Schema(d.Table)); err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return New(db, d, close), nil
}

// New returns a Store on a database that holds the table already (d.Lock
// is not used); close, if set, is what Close calls.
func New(db *sql.DB, d *Dialect, close func() error) *Store {
	t := d.Table
	s := &Store{db: db, d: d, close: close}
	s.insert = s.q(`INSERT INTO ` + t + ` (id, owner, capability, state, result, failure, progress, instance, lease_until, created_at, updated_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	s.get = s.q(`SELECT id, owner, capability, state, result, failure, progress, instance, lease_until, created_at, updated_at, expires_at FROM ` + t + ` WHERE id = ?`)
	s.finish = s.q(`UPDATE ` + t + ` SET state = ?, result = ?, failure = ?, expires_at = ?, updated_at = ? WHERE id = ? AND state = 'pending'`)
	s.progress = s.q(`UPDATE ` + t + ` SET progress = ?, updated_at = ? WHERE id = ? AND state = 'pending'`)
	s.renew = s.q(`UPDATE ` + t + ` SET lease_until = ? WHERE id = ? AND state = 'pending' AND instance = ?`)
	s.expire = s.q(`UPDATE ` + t + ` SET state = ?, result = NULL, failure = ?, expires_at = ?, updated_at = ? WHERE state = 'pending' AND lease_until < ?`)
	s.sweep = s.q(`DELETE FROM ` + t + ` WHERE state <> 'pending' AND expires_at < ?`)
	s.count = s.q(`SELECT COALESCE(SUM(CASE WHEN state = 'pending' THEN 1 ELSE 0 END), 0), COUNT(*) FROM ` + t + ` WHERE owner = ? AND (state = 'pending' OR expires_at >= ?)`)
	return s
}

// q numbers the placeholders for dialects that want $1, $2, ...
func (s *Store) q(query string) string {
	if !s.d.Numbered {
		return query
	}
	return sqlutil.Number(query)
}

// Close closes what Open was given to close.
func (s *Store) Close() error {
	if s.close == nil {
		return nil
	}
	return s.close()
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

func jsonText(v any) (sql.NullString, error) {
	switch x := v.(type) {
	case json.RawMessage:
		if x == nil {
			return sql.NullString{}, nil
		}
		return sql.NullString{String: string(x), Valid: true}, nil
	case *jobs.Failure:
		if x == nil {
			return sql.NullString{}, nil
		}
	case *core.Progress:
		if x == nil {
			return sql.NullString{}, nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return sql.NullString{}, err
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

// progressJSON is core.Progress as stored.
type progressJSON struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total"`
	Message  string  `json:"message"`
}

func progressText(p *core.Progress) (sql.NullString, error) {
	if p == nil {
		return sql.NullString{}, nil
	}
	return jsonText(progressJSON(*p))
}

// Create implements jobs.Store.
func (s *Store) Create(ctx context.Context, r *jobs.Record) error {
	result, err := jsonText(r.Result)
	if err != nil {
		return err
	}
	failure, err := jsonText(r.Failure)
	if err != nil {
		return fmt.Errorf("jobs: encoding the failure: %w", err)
	}
	progress, err := progressText(r.Progress)
	if err != nil {
		return fmt.Errorf("jobs: encoding the progress: %w", err)
	}
	_, err = s.db.ExecContext(ctx, s.insert, r.ID, r.Owner, r.Capability, string(r.State), result, failure, progress,
		r.Instance, ms(r.LeaseUntil), ms(r.Created), ms(r.Updated), ms(r.Expires))
	if err != nil {
		if s.d.IsUnique(err) {
			return jobs.ErrExists
		}
		return fmt.Errorf("jobs: inserting a job: %w", err)
	}
	return nil
}

// Get implements jobs.Store.
func (s *Store) Get(ctx context.Context, id string) (*jobs.Record, error) {
	var (
		r                                  jobs.Record
		state                              string
		result, failure, progress          sql.NullString
		lease, created, updated, expiresAt int64
	)
	err := s.db.QueryRowContext(ctx, s.get, id).Scan(&r.ID, &r.Owner, &r.Capability, &state, &result, &failure, &progress,
		&r.Instance, &lease, &created, &updated, &expiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, jobs.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: reading a job: %w", err)
	}
	r.State = jobs.State(state)
	if result.Valid {
		r.Result = json.RawMessage(result.String)
	}
	if failure.Valid {
		var f jobs.Failure
		if err := json.Unmarshal([]byte(failure.String), &f); err != nil {
			return nil, fmt.Errorf("jobs: decoding the failure of %s: %w", id, err)
		}
		r.Failure = &f
	}
	if progress.Valid {
		var p progressJSON
		if err := json.Unmarshal([]byte(progress.String), &p); err != nil {
			return nil, fmt.Errorf("jobs: decoding the progress of %s: %w", id, err)
		}
		cp := core.Progress(p)
		r.Progress = &cp
	}
	r.LeaseUntil, r.Created, r.Updated, r.Expires = fromMS(lease), fromMS(created), fromMS(updated), fromMS(expiresAt)
	return &r, nil
}

// Finish implements jobs.Store.
func (s *Store) Finish(ctx context.Context, id string, out jobs.Outcome, now time.Time) (bool, error) {
	result, err := jsonText(out.Result)
	if err != nil {
		return false, err
	}
	failure, err := jsonText(out.Failure)
	if err != nil {
		return false, fmt.Errorf("jobs: encoding the failure: %w", err)
	}
	res, err := s.db.ExecContext(ctx, s.finish, string(out.State), result, failure, ms(out.Expires), ms(now), id)
	if err != nil {
		return false, fmt.Errorf("jobs: finishing a job: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("jobs: finishing a job: %w", err)
	}
	return n == 1, nil
}

// SetProgress implements jobs.Store.
func (s *Store) SetProgress(ctx context.Context, id string, p core.Progress, now time.Time) error {
	text, err := progressText(&p)
	if err != nil {
		return fmt.Errorf("jobs: encoding the progress: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, s.progress, text, ms(now), id); err != nil {
		return fmt.Errorf("jobs: recording progress: %w", err)
	}
	return nil
}

// Renew implements jobs.Store.
func (s *Store) Renew(ctx context.Context, instance string, ids []string, leaseUntil, _ time.Time) ([]string, error) {
	var gone []string
	for _, id := range ids {
		res, err := s.db.ExecContext(ctx, s.renew, ms(leaseUntil), id, instance)
		if err != nil {
			return gone, fmt.Errorf("jobs: renewing a lease: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return gone, fmt.Errorf("jobs: renewing a lease: %w", err)
		} else if n == 0 {
			gone = append(gone, id)
		}
	}
	return gone, nil
}

// ExpireLeases implements jobs.Store.
func (s *Store) ExpireLeases(ctx context.Context, now time.Time, out jobs.Outcome) (int, error) {
	failure, err := jsonText(out.Failure)
	if err != nil {
		return 0, fmt.Errorf("jobs: encoding the failure: %w", err)
	}
	res, err := s.db.ExecContext(ctx, s.expire, string(out.State), failure, ms(out.Expires), ms(now), ms(now))
	if err != nil {
		return 0, fmt.Errorf("jobs: expiring leases: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// Sweep implements jobs.Store.
func (s *Store) Sweep(ctx context.Context, now time.Time) (int, error) {
	res, err := s.db.ExecContext(ctx, s.sweep, ms(now))
	if err != nil {
		return 0, fmt.Errorf("jobs: sweeping: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// CountOwner implements jobs.Store.
func (s *Store) CountOwner(ctx context.Context, owner string, now time.Time) (int, int, error) {
	var pending, kept int
	if err := s.db.QueryRowContext(ctx, s.count, owner, ms(now)).Scan(&pending, &kept); err != nil {
		return 0, 0, fmt.Errorf("jobs: counting jobs: %w", err)
	}
	return pending, kept, nil
}
