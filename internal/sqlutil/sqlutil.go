// Package sqlutil holds what the SQL stores of packages jobs, idempotency
// and audit share: placeholder numbering, schema creation and numbered
// migrations under a lock, and the checks of an SQLite file path.
package sqlutil

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Number rewrites the ? placeholders of query as $1, $2, ... for
// databases that want them (PostgreSQL); queries hold no literal '?'.
func Number(query string) string {
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// CreateSchema runs stmts in one transaction, after lock (if any), which
// serializes instances that start together.
func CreateSchema(ctx context.Context, db *sql.DB, lock func(context.Context, *sql.Tx) error, stmts []string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("creating the schema: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if lock != nil {
		if err := lock(ctx, tx); err != nil {
			return fmt.Errorf("locking the schema: %w", err)
		}
	}
	for _, stmt := range stmts {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("creating the schema: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("creating the schema: %w", err)
	}
	return nil
}

// PostgresLock returns a lock for CreateSchema: a transaction-scoped
// advisory lock named after name and the connection's schema, so stores in
// different schemas of one database create their tables independently.
func PostgresLock(name string) func(context.Context, *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext($1 || current_schema()))`, name+".")
		return err
	}
}

// SQLiteBusyTimeout is how long an SQLite write waits for another
// connection's.
const SQLiteBusyTimeout = 10 * time.Second

// SQLiteDSN checks that path is a plain file path (not a DSN, not
// :memory:) and returns the DSN that opens it with write-ahead logging,
// immediate write transactions and the busy timeout.
func SQLiteDSN(path string) (string, error) {
	switch {
	case path == "":
		return "", errors.New("empty path")
	case strings.HasPrefix(path, "file:"), strings.Contains(path, "?"), path == ":memory:":
		return "", fmt.Errorf("%q is not a plain file path", path)
	}
	return path + "?_txlock=immediate" +
		fmt.Sprintf("&_pragma=busy_timeout(%d)", SQLiteBusyTimeout.Milliseconds()) +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)", nil
}

// SQLiteConns is the number of idle connections an SQLite store keeps.
const SQLiteConns = 8

// SQLitePool has db keep up to SQLiteConns idle connections.
// database/sql keeps two by default, so after a burst of more concurrent
// calls it closes the others as they are handed back, and the next burst
// opens new ones, each with its WAL setup and pragmas to run and every
// statement to parse and prepare again. It does not bound the open
// connections: the store that wants a bound sets one.
func SQLitePool(db *sql.DB) {
	db.SetMaxIdleConns(SQLiteConns)
}

// Migrate brings a schema up to date: steps[i] is migration version i+1,
// a list of statements. The versions applied are recorded in table
// (created if needed); the missing ones run in order, all in one
// transaction after lock (if any), so a failure leaves the schema as it
// was and instances starting together apply each step once. A database
// holding a version beyond steps was written by a newer program and is
// refused.
func Migrate(ctx context.Context, db *sql.DB, lock func(context.Context, *sql.Tx) error, table string, steps [][]string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrating: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if lock != nil {
		if err := lock(ctx, tx); err != nil {
			return fmt.Errorf("locking the schema: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("migrating: %w", err)
	}
	var current sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM `+table).Scan(&current); err != nil {
		return fmt.Errorf("migrating: %w", err)
	}
	if int(current.Int64) > len(steps) {
		return fmt.Errorf("migrating: the database has migration %d of %s, which this program does not know: it was written by a newer version", current.Int64, table)
	}
	for v := int(current.Int64) + 1; v <= len(steps); v++ {
		for _, stmt := range steps[v-1] {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migrating to version %d: %w", v, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+table+` (version, applied_at) VALUES (`+strconv.Itoa(v)+`, `+strconv.FormatInt(time.Now().UnixMilli(), 10)+`)`); err != nil {
			return fmt.Errorf("migrating to version %d: %w", v, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrating: %w", err)
	}
	return nil
}
