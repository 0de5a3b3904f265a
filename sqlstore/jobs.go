package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/jobs"
)

// jobsStore holds job records (jobs.Store): one table, times as Unix
// milliseconds, every state change a single conditional UPDATE so that
// the database decides races.
type jobsStore struct {
	db       *sql.DB
	isUnique func(error) bool

	insert, get, finish, progress, renew, expire, sweep, count string
}

// jobsSchema creates the table of jobs and its indexes, if they do not
// exist.
var jobsSchema = []string{
	`CREATE TABLE IF NOT EXISTS ` + jobsTable + ` (
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
	`CREATE INDEX IF NOT EXISTS ` + jobsTable + `_lease ON ` + jobsTable + ` (state, lease_until)`,
	`CREATE INDEX IF NOT EXISTS ` + jobsTable + `_expires ON ` + jobsTable + ` (expires_at)`,
	`CREATE INDEX IF NOT EXISTS ` + jobsTable + `_owner ON ` + jobsTable + ` (owner, state)`,
}

// newJobsStore returns the job records on db, whose schema is up to date.
func newJobsStore(db *sql.DB, d *dialect) *jobsStore {
	t := jobsTable
	s := &jobsStore{db: db, isUnique: d.isUnique}
	s.insert = d.q(`INSERT INTO ` + t + ` (id, owner, capability, state, result, failure, progress, instance, lease_until, created_at, updated_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	s.get = d.q(`SELECT id, owner, capability, state, result, failure, progress, instance, lease_until, created_at, updated_at, expires_at FROM ` + t + ` WHERE id = ?`)
	s.finish = d.q(`UPDATE ` + t + ` SET state = ?, result = ?, failure = ?, expires_at = ?, updated_at = ? WHERE id = ? AND state = 'pending'`)
	s.progress = d.q(`UPDATE ` + t + ` SET progress = ?, updated_at = ? WHERE id = ? AND state = 'pending'`)
	s.renew = d.q(`UPDATE ` + t + ` SET lease_until = ? WHERE id = ? AND state = 'pending' AND instance = ?`)
	s.expire = d.q(`UPDATE ` + t + ` SET state = ?, result = NULL, failure = ?, expires_at = ?, updated_at = ? WHERE state = 'pending' AND lease_until < ?`)
	s.sweep = d.q(`DELETE FROM ` + t + ` WHERE state <> 'pending' AND expires_at < ?`)
	s.count = d.q(`SELECT COALESCE(SUM(CASE WHEN state = 'pending' THEN 1 ELSE 0 END), 0), COUNT(*) FROM ` + t + ` WHERE owner = ? AND (state = 'pending' OR expires_at >= ?)`)
	return s
}

// Close does nothing: the store's resources are the DB's.
func (*jobsStore) Close() error { return nil }

func jobsMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func jobsFromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

func jobsJSONText(v any) (sql.NullString, error) {
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

// jobsProgressJSON is core.Progress as stored.
type jobsProgressJSON struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total"`
	Message  string  `json:"message"`
}

func jobsProgressText(p *core.Progress) (sql.NullString, error) {
	if p == nil {
		return sql.NullString{}, nil
	}
	return jobsJSONText(jobsProgressJSON(*p))
}

// Create implements jobs.Store.
func (s *jobsStore) Create(ctx context.Context, r *jobs.Record) error {
	result, err := jobsJSONText(r.Result)
	if err != nil {
		return err
	}
	failure, err := jobsJSONText(r.Failure)
	if err != nil {
		return fmt.Errorf("jobs: encoding the failure: %w", err)
	}
	progress, err := jobsProgressText(r.Progress)
	if err != nil {
		return fmt.Errorf("jobs: encoding the progress: %w", err)
	}
	_, err = s.db.ExecContext(ctx, s.insert, r.ID, r.Owner, r.Capability, string(r.State), result, failure, progress,
		r.Instance, jobsMS(r.LeaseUntil), jobsMS(r.Created), jobsMS(r.Updated), jobsMS(r.Expires))
	if err != nil {
		if s.isUnique(err) {
			return jobs.ErrExists
		}
		return fmt.Errorf("jobs: inserting a job: %w", err)
	}
	return nil
}

// Get implements jobs.Store.
func (s *jobsStore) Get(ctx context.Context, id string) (*jobs.Record, error) {
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
		var p jobsProgressJSON
		if err := json.Unmarshal([]byte(progress.String), &p); err != nil {
			return nil, fmt.Errorf("jobs: decoding the progress of %s: %w", id, err)
		}
		cp := core.Progress(p)
		r.Progress = &cp
	}
	r.LeaseUntil, r.Created, r.Updated, r.Expires = jobsFromMS(lease), jobsFromMS(created), jobsFromMS(updated), jobsFromMS(expiresAt)
	return &r, nil
}

// Finish implements jobs.Store.
func (s *jobsStore) Finish(ctx context.Context, id string, out jobs.Outcome, now time.Time) (bool, error) {
	result, err := jobsJSONText(out.Result)
	if err != nil {
		return false, err
	}
	failure, err := jobsJSONText(out.Failure)
	if err != nil {
		return false, fmt.Errorf("jobs: encoding the failure: %w", err)
	}
	res, err := s.db.ExecContext(ctx, s.finish, string(out.State), result, failure, jobsMS(out.Expires), jobsMS(now), id)
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
func (s *jobsStore) SetProgress(ctx context.Context, id string, p core.Progress, now time.Time) error {
	text, err := jobsProgressText(&p)
	if err != nil {
		return fmt.Errorf("jobs: encoding the progress: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, s.progress, text, jobsMS(now), id); err != nil {
		return fmt.Errorf("jobs: recording progress: %w", err)
	}
	return nil
}

// Renew implements jobs.Store.
func (s *jobsStore) Renew(ctx context.Context, instance string, ids []string, leaseUntil, _ time.Time) ([]string, error) {
	var gone []string
	for _, id := range ids {
		res, err := s.db.ExecContext(ctx, s.renew, jobsMS(leaseUntil), id, instance)
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
func (s *jobsStore) ExpireLeases(ctx context.Context, now time.Time, out jobs.Outcome) (int, error) {
	failure, err := jobsJSONText(out.Failure)
	if err != nil {
		return 0, fmt.Errorf("jobs: encoding the failure: %w", err)
	}
	res, err := s.db.ExecContext(ctx, s.expire, string(out.State), failure, jobsMS(out.Expires), jobsMS(now), jobsMS(now))
	if err != nil {
		return 0, fmt.Errorf("jobs: expiring leases: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// Sweep implements jobs.Store.
func (s *jobsStore) Sweep(ctx context.Context, now time.Time) (int, error) {
	res, err := s.db.ExecContext(ctx, s.sweep, jobsMS(now))
	if err != nil {
		return 0, fmt.Errorf("jobs: sweeping: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// CountOwner implements jobs.Store.
func (s *jobsStore) CountOwner(ctx context.Context, owner string, now time.Time) (int, int, error) {
	var pending, kept int
	if err := s.db.QueryRowContext(ctx, s.count, owner, jobsMS(now)).Scan(&pending, &kept); err != nil {
		return 0, 0, fmt.Errorf("jobs: counting jobs: %w", err)
	}
	return pending, kept, nil
}
