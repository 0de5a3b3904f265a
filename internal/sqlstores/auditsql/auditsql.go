// Package auditsql is the audit.Store shared by the SQLite and PostgreSQL
// stores: one append-only table, times as Unix microseconds, pages by
// (time, id) newest first.
package auditsql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
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
	// GroupCommit writes the records of concurrent Writes together, in
	// one transaction, for databases with a single writer (SQLite),
	// where each transaction costs its own lock and log write.
	GroupCommit bool
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

	// group is the queue of a group commit (Dialect.GroupCommit).
	group groupQueue
}

// groupQueue holds the records waiting for a group commit. A Write that
// finds no commit under way writes its record at once; the Writes that
// find one under way queue their records. When a commit ends, the Write
// heading the queue commits the queue's first group (its own record and
// those behind it, up to maxGroup) in one transaction, and so on until
// the queue is empty. Each Write commits at most once, so none is held
// up by the others' records for longer than one group; none waits for
// company either: one alone is written at once.
type groupQueue struct {
	mu      sync.Mutex
	queue   []*pending
	leading bool
}

// pending is a record waiting for its commit: its outcome goes to done,
// and lead tells its Write that it heads the queue and commits next.
type pending struct {
	r    audit.Record
	done chan error
	lead chan struct{}
}

// maxGroup bounds the records of one transaction.
const maxGroup = 256

var _ audit.Store = (*Store)(nil)

// Open applies the migrations the database has not seen and returns a
// Store; close, if set, is what Close calls.
func Open(ctx context.Context, db *sql.DB, d *Dialect, close func() error) (*Store, error) {
	if err := sqlutil.Migrate(ctx, db, d.Lock, MigrationsTable, d.Migrations); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return New(db, d, close), nil
}

// New returns a Store on a database whose schema is already up to date
// (d.Migrations and d.Lock are not used); close, if set, is what Close
// calls.
func New(db *sql.DB, d *Dialect, close func() error) *Store {
	s := &Store{db: db, stmts: sqlutil.NewStmts(db, d.Prepare), close: close, d: d, now: time.Now, numbered: d.Numbered,
		insert: `INSERT INTO ` + Table + ` (` + columns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		sweep:  `DELETE FROM ` + Table + ` WHERE at < ?`,
	}
	s.insert, s.sweep = s.q(s.insert), s.q(s.sweep)
	return s
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

// Write implements audit.Sink. It returns once the record is committed,
// or with the error that kept it from being. Under Dialect.GroupCommit a
// record is written whatever becomes of ctx once ctx has been found live
// (one that waits for a group is committed with it), and its Write waits
// for that commit: the driver is given a context that is never
// canceled, so that it does not start a goroutine per statement to watch
// it.
func (s *Store) Write(ctx context.Context, r audit.Record) error {
	r, err := audit.Prepare(r, s.now())
	if err != nil {
		return err
	}
	if !s.d.GroupCommit {
		return s.insertRecord(ctx, r)
	}
	g := &s.group
	g.mu.Lock()
	if !g.leading {
		// No commit under way: this record is written at once, like
		// those of a group whatever becomes of ctx, which the driver
		// would otherwise watch with a goroutine of its own.
		g.leading = true
		g.mu.Unlock()
		err := ctx.Err()
		if err == nil {
			err = s.insertRecord(context.WithoutCancel(ctx), r)
		} else {
			err = fmt.Errorf("audit: writing a record: %w", err)
		}
		s.handOff()
		return err
	}
	p := &pending{r: r, done: make(chan error, 1), lead: make(chan struct{}, 1)}
	g.queue = append(g.queue, p)
	g.mu.Unlock()
	select {
	case err := <-p.done:
		return err
	case <-p.lead:
	}
	// This Write heads the queue: it commits the queue's first group,
	// its own record among them, and hands the lead on.
	g.mu.Lock()
	n := min(len(g.queue), maxGroup)
	batch := g.queue[:n:n]
	g.queue = g.queue[n:]
	g.mu.Unlock()
	s.commitGroup(context.WithoutCancel(ctx), batch)
	s.handOff()
	return <-p.done
}

// handOff ends a commit: the Write heading the queue leads the next one,
// or, with nothing queued, the next Write writes at once.
func (s *Store) handOff() {
	g := &s.group
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) == 0 {
		g.queue = nil
		g.leading = false
		return
	}
	g.queue[0].lead <- struct{}{}
}

// commitGroup writes batch in one transaction. When that fails, each
// record is written on its own, so that one record's fault (a duplicate
// id) is its own Write's error only.
func (s *Store) commitGroup(ctx context.Context, batch []*pending) {
	if len(batch) > 1 {
		if err := s.insertAll(ctx, batch); err == nil {
			for _, p := range batch {
				p.done <- nil
			}
			return
		}
	}
	for _, p := range batch {
		p.done <- s.insertRecord(ctx, p.r)
	}
}

// insertAll inserts the records of batch in one transaction, through
// one statement.
func (s *Store) insertAll(ctx context.Context, batch []*pending) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	exec := func(args ...any) (sql.Result, error) { return tx.ExecContext(ctx, s.insert, args...) }
	if st, err := s.stmts.Prepared(ctx, s.insert); err == nil && st != nil {
		tst := tx.StmtContext(ctx, st)
		defer tst.Close()
		exec = func(args ...any) (sql.Result, error) { return tst.ExecContext(ctx, args...) }
	}
	var a [16]any
	for _, p := range batch {
		if _, err := exec(recordArgs(p.r, &a)...); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// insertRecord inserts a prepared record on its own.
func (s *Store) insertRecord(ctx context.Context, r audit.Record) error {
	var a [16]any
	_, err := s.stmts.Exec(ctx, nil, s.insert, recordArgs(r, &a)...)
	if err != nil {
		if s.d.IsUnique != nil && s.d.IsUnique(err) {
			return fmt.Errorf("%w %q", audit.ErrDuplicateID, r.ID)
		}
		return fmt.Errorf("audit: writing a record: %w", err)
	}
	return nil
}

// recordArgs fills a with the values of r's columns, in the order of
// columns, and returns it as a slice (a lives on the caller's stack).
func recordArgs(r audit.Record, a *[16]any) []any {
	var args sql.NullString
	if r.Arguments != nil {
		args = sql.NullString{String: string(r.Arguments), Valid: true}
	}
	*a = [16]any{r.ID, r.Time.UnixMicro(), r.Event, r.Outcome, r.AgentID, r.HostID, r.UserID,
		r.Capability, r.ArgumentsDigest, r.ConfirmationID, r.RequestID, r.TraceID, r.ClientIP, int64(r.Duration), r.Detail, args}
	return a[:]
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
