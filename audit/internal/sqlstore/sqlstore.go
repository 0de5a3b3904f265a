// Package sqlstore is the audit.Store shared by the SQLite and PostgreSQL
// stores: one append-only table, times as Unix microseconds, pages by
// (time, id) newest first.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/internal/sqlutil"
)

// Table holds the records; MigrationsTable the versions of its schema.
const (
	Table           = "agentcap_audit"
	MigrationsTable = "agentcap_audit_migrations"
)

// Dialect is what differs between databases.
type Dialect struct {
	// Numbered placeholders ($1) instead of ?.
	Numbered bool
	// Lock, when set, serializes migrations across instances.
	Lock func(ctx context.Context, tx *sql.Tx) error
	// Migrations are the schema's versions, oldest first.
	Migrations [][]string
	// IsUnique reports a primary key violation.
	IsUnique func(error) bool
	// Prepare prepares the insert of a record once and reuses it, for
	// drivers that would parse its SQL text on every write (SQLite); pgx
	// caches its statements itself.
	Prepare bool
}

// Columns, in the order of inserts and selects.
const columns = `id, at, event, outcome, agent_id, host_id, user_id, capability, arguments_sha256, confirmation_id, request_id, trace_id, client_ip, duration_ns, detail, arguments`

// CreateTable is the first migration's table and indexes, common to both
// databases (BIGINT and TEXT mean the same in each).
var CreateTable = []string{
	`CREATE TABLE ` + Table + ` (
	id TEXT PRIMARY KEY,
	at BIGINT NOT NULL,
	event TEXT NOT NULL,
	outcome TEXT NOT NULL,
	agent_id TEXT NOT NULL,
	host_id TEXT NOT NULL,
	user_id TEXT NOT NULL,
	capability TEXT NOT NULL,
	arguments_sha256 TEXT NOT NULL,
	confirmation_id TEXT NOT NULL,
	request_id TEXT NOT NULL,
	trace_id TEXT NOT NULL,
	client_ip TEXT NOT NULL,
	duration_ns BIGINT NOT NULL,
	detail TEXT NOT NULL,
	arguments TEXT
)`,
	`CREATE INDEX ` + Table + `_at ON ` + Table + ` (at, id)`,
	`CREATE INDEX ` + Table + `_user ON ` + Table + ` (user_id, at, id)`,
	`CREATE INDEX ` + Table + `_agent ON ` + Table + ` (agent_id, at, id)`,
	`CREATE INDEX ` + Table + `_capability ON ` + Table + ` (capability, at, id)`,
	`CREATE INDEX ` + Table + `_event ON ` + Table + ` (event, at, id)`,
}

// Store is an audit.Store on a database/sql handle.
type Store struct {
	db       *sql.DB
	stmts    *sqlutil.Stmts
	close    func() error
	d        *Dialect
	now      func() time.Time
	insert   string
	sweep    string
	numbered bool
}

var _ audit.Store = (*Store)(nil)

// Open applies the migrations the database has not seen and returns a
// Store; close, if set, is what Close calls.
func Open(ctx context.Context, db *sql.DB, d *Dialect, close func() error) (*Store, error) {
	if err := sqlutil.Migrate(ctx, db, d.Lock, MigrationsTable, d.Migrations); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	s := &Store{db: db, stmts: sqlutil.NewStmts(db, d.Prepare), close: close, d: d, now: time.Now, numbered: d.Numbered,
		insert: `INSERT INTO ` + Table + ` (` + columns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		sweep:  `DELETE FROM ` + Table + ` WHERE at < ?`,
	}
	s.insert, s.sweep = s.q(s.insert), s.q(s.sweep)
	return s, nil
}

func (s *Store) q(query string) string {
	if s.numbered {
		return sqlutil.Number(query)
	}
	return query
}

// SetClock replaces time.Now for filling record times. It must be called
// before the store is first used.
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// SetCloser replaces what Close calls after closing the prepared
// statements.
func (s *Store) SetCloser(close func() error) { s.close = close }

// DB returns the database handle.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the prepared statements, then what Open was given to
// close.
func (s *Store) Close() error {
	err := s.stmts.Close()
	if s.close != nil {
		err = errors.Join(err, s.close())
	}
	return err
}

// Write implements audit.Sink.
func (s *Store) Write(ctx context.Context, r audit.Record) error {
	r, err := audit.Prepare(r, s.now())
	if err != nil {
		return err
	}
	var args sql.NullString
	if r.Arguments != nil {
		args = sql.NullString{String: string(r.Arguments), Valid: true}
	}
	_, err = s.stmts.Exec(ctx, nil, s.insert, r.ID, r.Time.UnixMicro(), r.Event, r.Outcome, r.AgentID, r.HostID, r.UserID,
		r.Capability, r.ArgumentsDigest, r.ConfirmationID, r.RequestID, r.TraceID, r.ClientIP, int64(r.Duration), r.Detail, args)
	if err != nil {
		if s.d.IsUnique != nil && s.d.IsUnique(err) {
			return fmt.Errorf("%w %q", audit.ErrDuplicateID, r.ID)
		}
		return fmt.Errorf("audit: writing a record: %w", err)
	}
	return nil
}

// Query implements audit.Store.
func (s *Store) Query(ctx context.Context, q audit.Query) (audit.Page, error) {
	q, after, err := q.Normalize()
	if err != nil {
		return audit.Page{}, err
	}
	var (
		where []string
		args  []any
	)
	for _, f := range []struct{ col, v string }{
		{"user_id", q.UserID}, {"agent_id", q.AgentID}, {"capability", q.Capability}, {"event", q.Event},
	} {
		if f.v != "" {
			where = append(where, f.col+" = ?")
			args = append(args, f.v)
		}
	}
	if !q.Since.IsZero() {
		where = append(where, "at >= ?")
		args = append(args, q.Since.UnixMicro())
	}
	if !q.Until.IsZero() {
		where = append(where, "at < ?")
		args = append(args, q.Until.UnixMicro())
	}
	if after != nil {
		us := after.Time.UnixMicro()
		where = append(where, "(at < ? OR (at = ? AND id < ?))")
		args = append(args, us, us, after.ID)
	}
	query := `SELECT ` + columns + ` FROM ` + Table
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY at DESC, id DESC LIMIT ?`
	args = append(args, q.Limit+1)
	rows, err := s.db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return audit.Page{}, fmt.Errorf("audit: querying: %w", err)
	}
	defer rows.Close()
	var page audit.Page
	for rows.Next() {
		var (
			r        audit.Record
			at, dur  int64
			argsText sql.NullString
		)
		if err := rows.Scan(&r.ID, &at, &r.Event, &r.Outcome, &r.AgentID, &r.HostID, &r.UserID, &r.Capability,
			&r.ArgumentsDigest, &r.ConfirmationID, &r.RequestID, &r.TraceID, &r.ClientIP, &dur, &r.Detail, &argsText); err != nil {
			return audit.Page{}, fmt.Errorf("audit: reading a record: %w", err)
		}
		r.Time = time.UnixMicro(at).UTC()
		r.Duration = time.Duration(dur)
		if argsText.Valid {
			r.Arguments = []byte(argsText.String)
		}
		page.Records = append(page.Records, r)
	}
	if err := rows.Err(); err != nil {
		return audit.Page{}, fmt.Errorf("audit: querying: %w", err)
	}
	if len(page.Records) > q.Limit {
		page.Records = page.Records[:q.Limit]
		last := page.Records[q.Limit-1]
		page.NextCursor = audit.EncodeCursor(audit.Position{Time: last.Time, ID: last.ID})
	}
	return page, nil
}

// Sweep implements audit.Store.
func (s *Store) Sweep(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.sweep, before.UnixMicro())
	if err != nil {
		return 0, fmt.Errorf("audit: sweeping: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, errors.Join(errors.New("audit: sweeping"), err)
	}
	return n, nil
}
