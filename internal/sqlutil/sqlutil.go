// Package sqlutil holds what the SQL stores (package sqlstore and the
// provider's stores) share: placeholder numbering, the advisory lock of
// a migration on PostgreSQL, the SQLite file path, DSN and pool, and
// prepared statements.
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

// PostgresLock returns a lock for a migrating transaction: a
// transaction-scoped advisory lock named after name and the connection's
// schema, so stores in different schemas of one database create their
// tables independently.
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
