package sqlutil_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/agentcap/agentcap/internal/sqlutil"
)

// openFile opens a new SQLite file with database/sql's default pool.
func openFile(t *testing.T) *sql.DB {
	t.Helper()
	dsn, err := sqlutil.SQLiteDSN(filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func openSQLite(t *testing.T) *sql.DB {
	t.Helper()
	db := openFile(t)
	db.SetMaxOpenConns(4)
	if _, err := db.Exec(`CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestStmts: a query is prepared once whoever runs it, in or out of a
// transaction and from many goroutines, and its statement outlives the
// transactions that used it; a query first met in a transaction runs
// unprepared; after Close queries run unprepared.
func TestStmts(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	c := sqlutil.NewStmts(db, true)
	const (
		insert = `INSERT INTO kv (k, v) VALUES (?, ?)`
		read   = `SELECT v FROM kv WHERE k = ?`
		bump   = `UPDATE kv SET v = v + 1 WHERE k = ?`
	)
	if err := c.Prepare(ctx, bump); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Go(func() {
			k := fmt.Sprint("k", i)
			if _, err := c.Exec(ctx, nil, insert, k, i); err != nil {
				errs <- fmt.Errorf("insert: %w", err)
				return
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				errs <- fmt.Errorf("begin: %w", err)
				return
			}
			defer tx.Rollback()
			if _, err := c.Exec(ctx, tx, bump, k); err != nil {
				errs <- fmt.Errorf("update: %w", err)
				return
			}
			var v int
			if err := c.QueryRow(ctx, tx, read, k).Scan(&v); err != nil || v != i+1 {
				errs <- fmt.Errorf("in the transaction %s = %d, %v; want %d", k, v, err, i+1)
				return
			}
			if err := tx.Commit(); err != nil {
				errs <- fmt.Errorf("commit: %w", err)
				return
			}
			rows, err := c.Query(ctx, nil, read, k)
			if err != nil {
				errs <- fmt.Errorf("read: %w", err)
				return
			}
			defer rows.Close()
			if !rows.Next() || rows.Scan(&v) != nil || v != i+1 {
				errs <- fmt.Errorf("after commit %s = %d, want %d", k, v, i+1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := c.Len(); n != 3 {
		t.Errorf("%d statements prepared, want 3", n)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var total int
	if err := c.QueryRow(ctx, tx, `SELECT sum(v) FROM kv`).Scan(&total); err != nil || total != 16*17/2 {
		t.Errorf("sum in a transaction %d, %v; want %d", total, err, 16*17/2)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if n := c.Len(); n != 3 {
		t.Errorf("%d statements prepared after a new query in a transaction, want 3", n)
	}
	if _, err := c.Exec(ctx, nil, `INSERT INTO nowhere VALUES (?)`, 1); err == nil {
		t.Error("a query on a missing table ran")
	}
	if n := c.Len(); n != 3 {
		t.Errorf("%d statements after a failed preparation, want 3", n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := c.Len(); n != 0 {
		t.Errorf("%d statements after Close", n)
	}
	if _, err := c.Prepared(ctx, read); !errors.Is(err, sqlutil.ErrStmtsClosed) {
		t.Errorf("Prepared after Close: %v", err)
	}
	var v int
	if err := c.QueryRow(ctx, nil, read, "k3").Scan(&v); err != nil || v != 4 {
		t.Errorf("unprepared after Close: %d, %v", v, err)
	}
	if n := c.Len(); n != 0 {
		t.Errorf("%d statements prepared after Close", n)
	}
}

// TestStmtsUnprepared: with prepare false, queries run as text.
func TestStmtsUnprepared(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	c := sqlutil.NewStmts(db, false)
	if _, err := c.Exec(ctx, nil, `INSERT INTO kv (k, v) VALUES (?, ?)`, "a", 1); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := c.QueryRow(ctx, nil, `SELECT v FROM kv WHERE k = ?`, "a").Scan(&v); err != nil || v != 1 {
		t.Fatalf("read %d, %v", v, err)
	}
	if n := c.Len(); n != 0 {
		t.Errorf("%d statements prepared", n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}
