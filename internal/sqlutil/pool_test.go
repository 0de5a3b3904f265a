package sqlutil_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/agentcap/agentcap/internal/sqlutil"
	"github.com/agentcap/agentcap/sqlstore"
)

// heldConns opens n connections of db at once, hands them back, and
// returns db's pool statistics then: what a burst of n concurrent calls
// leaves behind.
func heldConns(t *testing.T, db *sql.DB, n int) sql.DBStats {
	t.Helper()
	ctx := context.Background()
	conns := make([]*sql.Conn, n)
	for i := range conns {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// A connection is opened lazily: use it.
		if err := c.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	for _, c := range conns {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return db.Stats()
}

// TestSQLitePool: after a burst of SQLiteConns concurrent calls, every
// connection is kept for the next calls, none closed and
// opened again (with its pragmas and prepared statements); database/sql's
// default pool would have closed all but two.
func TestSQLitePool(t *testing.T) {
	// The default pool, for contrast: the burst is what it is said to be.
	if st := heldConns(t, openFile(t), sqlutil.SQLiteConns); st.MaxIdleClosed != sqlutil.SQLiteConns-2 {
		t.Fatalf("default pool: %d connections closed as idle, want %d", st.MaxIdleClosed, sqlutil.SQLiteConns-2)
	}
	db := openFile(t)
	sqlutil.SQLitePool(db)
	st := heldConns(t, db, sqlutil.SQLiteConns)
	if st.MaxIdleClosed != 0 || st.Idle != sqlutil.SQLiteConns {
		t.Fatalf("SQLitePool: %+v; want %d idle, none closed", st, sqlutil.SQLiteConns)
	}
	// And again: the same connections serve the next burst.
	if st := heldConns(t, db, sqlutil.SQLiteConns); st.OpenConnections != sqlutil.SQLiteConns || st.MaxIdleClosed != 0 {
		t.Fatalf("second burst: %+v", st)
	}
}

// TestSQLiteStoresPool: the SQL store sizes its SQLite pool so.
func TestSQLiteStoresPool(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := sqlstore.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if st := heldConns(t, db.SQL(), sqlutil.SQLiteConns); st.MaxIdleClosed != 0 || st.Idle != sqlutil.SQLiteConns {
		t.Errorf("sqlstore: %+v; want %d idle, none closed", st, sqlutil.SQLiteConns)
	}
}
