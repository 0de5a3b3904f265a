package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/internal/sqlutil"
)

// auditColumns are the columns, in the order of inserts and selects.
const auditColumns = `id, at, event, outcome, agent_id, host_id, user_id, capability, arguments_sha256, confirmation_id, request_id, trace_id, client_ip, duration_ns, detail, arguments`

// auditCreateTable is the table and indexes of the audit trail, common to
// both databases (BIGINT and TEXT mean the same in each).
var auditCreateTable = []string{
	`CREATE TABLE ` + auditTable + ` (
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
	`CREATE INDEX ` + auditTable + `_at ON ` + auditTable + ` (at, id)`,
	`CREATE INDEX ` + auditTable + `_user ON ` + auditTable + ` (user_id, at, id)`,
	`CREATE INDEX ` + auditTable + `_agent ON ` + auditTable + ` (agent_id, at, id)`,
	`CREATE INDEX ` + auditTable + `_capability ON ` + auditTable + ` (capability, at, id)`,
	`CREATE INDEX ` + auditTable + `_event ON ` + auditTable + ` (event, at, id)`,
}

// auditDropFilterIndexes drops the indexes that version 5 made for
// queries by agent, capability or event alone. Each index is one more
// B-tree that every record's insert and commit writes to: the three took
// about half the cost of a record on SQLite. The trail keeps its time
// order (at, id) and each user's records (user_id, at, id), which the
// provider's Activity page reads; a query by agent, capability or event
// reads those newest first and filters, which is quick while the value
// is common among the records it reads. An application that often asks
// for rare ones can create an index of its own on the table.
var auditDropFilterIndexes = []string{
	`DROP INDEX IF EXISTS ` + auditTable + `_agent`,
	`DROP INDEX IF EXISTS ` + auditTable + `_capability`,
	`DROP INDEX IF EXISTS ` + auditTable + `_event`,
}

// auditStore is the audit trail (audit.Store): one append-only table,
// times as Unix microseconds, pages by (time, id) newest first. Its
// records are only ever appended (a trigger refuses updates) and deleted
// by age by Sweep. The records of concurrent Writes are committed
// together (group commit; on PostgreSQL by one INSERT of several rows,
// on SQLite on a connection kept for it, by one such INSERT too or, for
// large groups, in one transaction): a Write that finds no commit under
// way writes its record at once (or, while Writes arrive faster than
// commits end, after waiting up to auditLinger for company); the
// records that arrive meanwhile queue, and when a commit ends the first
// of them commits the queue's next group, at most 256 records, all or
// none. Each Write returns once its own record is committed, or with
// the error that kept it from being (a record whose id is taken fails
// alone).
type auditStore struct {
	db     *sql.DB
	stmts  *sqlutil.Stmts
	d      *dialect
	now    func() time.Time
	insert string
	sweep  string

	// group is the queue of a group commit (dialect.groupCommit).
	group auditGroupQueue
	// rowsSQL holds the texts of insertRows by number of records.
	rowsSQL sync.Map
	// writer, when the DB owns its pool (OpenSQLite), is the connection
	// group commits write on: the commits are one at a time anyway, and
	// on one connection the pages they touch stay in its cache, where
	// each connection of the pool in turn would read them again after
	// the others' commits. Only the Write leading a commit uses it.
	writer *auditWriter
}

// auditWriter is a connection kept for the audit store's commits, with
// the insert prepared on it, and the inserts of several records
// (insertRows) as groups of those sizes come.
type auditWriter struct {
	conn   *sql.Conn
	insert *sql.Stmt
	rows   map[int]*sql.Stmt
}

// auditWriterRows bounds the records of the INSERTs prepared on the kept
// connection: a group of up to that many records is committed by one
// statement (SQLite commits a statement outside a transaction on its
// own), a larger one in a transaction, one INSERT per record. Each size
// prepared stays on the connection, and a statement of n records is
// some n kilobytes of SQLite's memory.
const auditWriterRows = 16

// insertRows returns the INSERT of n records prepared on w's connection.
func (w *auditWriter) insertRows(ctx context.Context, s *auditStore, n int) (*sql.Stmt, error) {
	if st := w.rows[n]; st != nil {
		return st, nil
	}
	st, err := w.conn.PrepareContext(ctx, s.insertRows(n))
	if err != nil {
		return nil, err
	}
	if w.rows == nil {
		w.rows = make(map[int]*sql.Stmt)
	}
	w.rows[n] = st
	return st, nil
}

// pinWriter keeps a connection of the pool for the store's commits (see
// auditStore.writer).
func (s *auditStore) pinWriter(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	st, err := conn.PrepareContext(ctx, s.insert)
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("audit: %w", err)
	}
	s.writer = &auditWriter{conn: conn, insert: st}
	return nil
}

// closeWriter gives the kept connection back.
func (s *auditStore) closeWriter() error {
	if s.writer == nil {
		return nil
	}
	w := s.writer
	s.writer = nil
	errs := []error{w.insert.Close()}
	for _, st := range w.rows {
		errs = append(errs, st.Close())
	}
	return errors.Join(append(errs, w.conn.Close())...)
}

// writerFailed drops a kept connection that err reports broken; the
// next commit keeps another.
func (s *auditStore) writerFailed(ctx context.Context, err error) {
	if s.writer == nil || !(errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn)) {
		return
	}
	_ = s.closeWriter()
	_ = s.pinWriter(ctx)
}

// auditGroupQueue holds the records waiting for a group commit. A Write
// that finds no commit under way writes its record at once; the Writes
// that find one under way queue their records. When a commit ends, the
// Write heading the queue commits the queue's first group (its own record
// and those behind it, up to auditMaxGroup) in one transaction, and so on
// until the queue is empty. Each Write commits at most once, so none is held
// up by the others' records for longer than one group; and none waits for
// company longer than auditLinger, nor at all when calls come one at a
// time (busyUntil).
type auditGroupQueue struct {
	mu      sync.Mutex
	queue   []*auditPending
	leading bool
	// busyUntil is auditBusyFor after the last commit that had company
	// (more than one record, or records queued behind it when it ended):
	// until then Writes are taken to arrive faster than commits end, and
	// a Write that finds no commit under way waits a little for company
	// (see auditLinger).
	busyUntil time.Time
	// filled, while a Write waits for company, is closed when the queue
	// holds auditLingerFill records.
	filled chan struct{}
}

// auditPending is a record waiting for its commit: its outcome goes to
// done, and lead tells its Write that it heads the queue and commits next.
type auditPending struct {
	r    audit.Record
	done chan error
	lead chan struct{}
}

// auditMaxGroup bounds the records of one transaction.
const auditMaxGroup = 256

// A Write that finds no commit under way while Writes arrive faster than
// commits end (auditGroupQueue.busyUntil) waits up to auditLinger, or until
// auditLingerFill records are queued, before it commits: one commit
// then writes the records of several calls instead of one. One call at
// a time never waits.
const (
	auditLinger     = 200 * time.Microsecond
	auditLingerFill = 8
	auditBusyFor    = 50 * time.Millisecond
)

// newAuditStore returns the audit store on db, whose schema is up to
// date.
func newAuditStore(db *sql.DB, d *dialect) *auditStore {
	return &auditStore{db: db, stmts: sqlutil.NewStmts(db, d.prepare), d: d, now: time.Now,
		insert: d.q(`INSERT INTO ` + auditTable + ` (` + auditColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		sweep:  d.q(`DELETE FROM ` + auditTable + ` WHERE at < ?`),
	}
}

// Close does nothing: the store's resources are the DB's, which DB.Close
// releases.
func (*auditStore) Close() error { return nil }

// Write implements audit.Sink. It returns once the record is committed,
// or with the error that kept it from being. Under group commit a
// record is written whatever becomes of ctx once ctx has been found live
// (one that waits for a group is committed with it), and its Write waits
// for that commit: the driver is given a context that is never
// canceled, so that it does not start a goroutine per statement to watch
// it.
func (s *auditStore) Write(ctx context.Context, r audit.Record) error {
	r, err := audit.Prepare(r, s.now())
	if err != nil {
		return err
	}
	if !s.d.groupCommit {
		return s.insertRecord(ctx, r)
	}
	g := &s.group
	g.mu.Lock()
	if !g.leading && time.Now().Before(g.busyUntil) {
		// No commit under way, but others are on their way: this Write
		// leads the next commit after waiting for company.
		if err := ctx.Err(); err != nil {
			g.mu.Unlock()
			return fmt.Errorf("audit: writing a record: %w", err)
		}
		g.leading = true
		p := &auditPending{r: r, done: make(chan error, 1)}
		g.queue = append(g.queue, p)
		filled := make(chan struct{})
		g.filled = filled
		g.mu.Unlock()
		t := time.NewTimer(auditLinger)
		select {
		case <-t.C:
		case <-filled:
			t.Stop()
		}
		s.commitNext(ctx)
		return <-p.done
	}
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
		s.handOff(false)
		return err
	}
	p := &auditPending{r: r, done: make(chan error, 1), lead: make(chan struct{}, 1)}
	g.queue = append(g.queue, p)
	if g.filled != nil && len(g.queue) >= auditLingerFill {
		close(g.filled)
		g.filled = nil
	}
	g.mu.Unlock()
	select {
	case err := <-p.done:
		return err
	case <-p.lead:
	}
	// This Write heads the queue: it commits the queue's first group,
	// its own record among them, and hands the lead on.
	s.commitNext(ctx)
	return <-p.done
}

// commitNext commits the queue's first group and hands the lead on; the
// Write that calls it leads, and its record is in the group.
func (s *auditStore) commitNext(ctx context.Context) {
	g := &s.group
	g.mu.Lock()
	g.filled = nil
	n := min(len(g.queue), auditMaxGroup)
	batch := g.queue[:n:n]
	g.queue = g.queue[n:]
	g.mu.Unlock()
	s.commitGroup(context.WithoutCancel(ctx), batch)
	s.handOff(len(batch) > 1)
}

// handOff ends a commit, which had company when it wrote several
// records: the Write heading the queue leads the next one, or, with
// nothing queued, the next Write leads (see auditGroupQueue.busyUntil).
func (s *auditStore) handOff(company bool) {
	g := &s.group
	g.mu.Lock()
	defer g.mu.Unlock()
	if company || len(g.queue) > 0 {
		g.busyUntil = time.Now().Add(auditBusyFor)
	}
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
func (s *auditStore) commitGroup(ctx context.Context, batch []*auditPending) {
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

// insertAll inserts the records of batch all or none: by one INSERT of
// several rows (PostgreSQL; SQLite on the kept connection, up to
// auditWriterRows records), else in one transaction.
func (s *auditStore) insertAll(ctx context.Context, batch []*auditPending) (err error) {
	if s.d.groupInsert {
		_, err := s.db.ExecContext(ctx, s.insertRows(len(batch)), batchArgs(batch)...)
		return err
	}
	if w := s.writer; w != nil {
		defer func() { s.writerFailed(ctx, err) }()
		if len(batch) <= auditWriterRows {
			st, err := w.insertRows(ctx, s, len(batch))
			if err != nil {
				return err
			}
			_, err = st.ExecContext(ctx, batchArgs(batch)...)
			return err
		}
		tx, err := w.conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		return s.insertInTx(ctx, tx, tx.StmtContext(ctx, w.insert), batch)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	var st *sql.Stmt
	if prepared, err := s.stmts.Prepared(ctx, s.insert); err == nil && prepared != nil {
		st = tx.StmtContext(ctx, prepared)
	}
	return s.insertInTx(ctx, tx, st, batch)
}

// batchArgs is the arguments of insertRows(len(batch)) for batch.
func batchArgs(batch []*auditPending) []any {
	args := make([]any, 0, 16*len(batch))
	var a [16]any
	for _, p := range batch {
		args = append(args, auditRecordArgs(p.r, &a)...)
	}
	return args
}

// insertRows is the INSERT of n records in one statement.
func (s *auditStore) insertRows(n int) string {
	if q, ok := s.rowsSQL.Load(n); ok {
		return q.(string)
	}
	var b strings.Builder
	b.WriteString(`INSERT INTO ` + auditTable + ` (` + auditColumns + `) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?" + strings.Repeat(", ?", 15) + ")")
	}
	q := s.d.q(b.String())
	s.rowsSQL.Store(n, q)
	return q
}

// insertInTx inserts the records of batch in tx, through st when it is
// not nil, and commits.
func (s *auditStore) insertInTx(ctx context.Context, tx *sql.Tx, st *sql.Stmt, batch []*auditPending) error {
	exec := func(args ...any) (sql.Result, error) { return tx.ExecContext(ctx, s.insert, args...) }
	if st != nil {
		defer st.Close()
		exec = func(args ...any) (sql.Result, error) { return st.ExecContext(ctx, args...) }
	}
	var a [16]any
	for _, p := range batch {
		if _, err := exec(auditRecordArgs(p.r, &a)...); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// insertRecord inserts a prepared record on its own.
func (s *auditStore) insertRecord(ctx context.Context, r audit.Record) error {
	var a [16]any
	var err error
	if w := s.writer; w != nil {
		_, err = w.insert.ExecContext(ctx, auditRecordArgs(r, &a)...)
		s.writerFailed(ctx, err)
	} else {
		_, err = s.stmts.Exec(ctx, nil, s.insert, auditRecordArgs(r, &a)...)
	}
	if err != nil {
		if s.d.isUnique(err) {
			return fmt.Errorf("%w %q", audit.ErrDuplicateID, r.ID)
		}
		return fmt.Errorf("audit: writing a record: %w", err)
	}
	return nil
}

// auditRecordArgs fills a with the values of r's columns, in the order
// of auditColumns, and returns it as a slice (a lives on the caller's stack).
func auditRecordArgs(r audit.Record, a *[16]any) []any {
	var args sql.NullString
	if r.Arguments != nil {
		args = sql.NullString{String: string(r.Arguments), Valid: true}
	}
	*a = [16]any{r.ID, r.Time.UnixMicro(), r.Event, r.Outcome, r.AgentID, r.HostID, r.UserID,
		r.Capability, r.ArgumentsDigest, r.ConfirmationID, r.RequestID, r.TraceID, r.ClientIP, int64(r.Duration), r.Detail, args}
	return a[:]
}

// Query implements audit.Store.
func (s *auditStore) Query(ctx context.Context, q audit.Query) (audit.Page, error) {
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
	query := `SELECT ` + auditColumns + ` FROM ` + auditTable
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY at DESC, id DESC LIMIT ?`
	args = append(args, q.Limit+1)
	rows, err := s.db.QueryContext(ctx, s.d.q(query), args...)
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
func (s *auditStore) Sweep(ctx context.Context, before time.Time) (int64, error) {
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
