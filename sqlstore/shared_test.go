package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/sqlstore"
)

// On an SQLite handle of the application, the stores share it; the
// second round finds the schema up to date; closing the DB leaves the
// handle open.
func TestNewSQLiteOnApplicationHandle(t *testing.T) {
	ctx := context.Background()
	handle := sqliteHandle(t, filepath.Join(t.TempDir(), "app.db"))
	for round := range 2 {
		db, err := sqlstore.NewSQLite(ctx, handle)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Audit().Write(ctx, audit.Record{Event: audit.EventHostRegistered, Outcome: audit.OutcomeOK, HostID: "h"}); err != nil {
			t.Fatal(err)
		}
		page, err := db.Audit().Query(ctx, audit.Query{Event: audit.EventHostRegistered})
		if err != nil || len(page.Records) != round+1 {
			t.Fatalf("round %d: %d records, %v", round, len(page.Records), err)
		}
		if _, err := db.Provider().GetHost(ctx, "h0"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("provider records: %v", err)
		}
		checkVersions(t, db.SQL())
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if err := handle.PingContext(ctx); err != nil {
			t.Fatalf("the handle after the DB closed: %v", err)
		}
	}
}

// sqliteHandle opens an SQLite handle of the test's on path, with the DSN
// OpenSQLite uses, closed when the test ends.
func sqliteHandle(t *testing.T, path string) *sql.DB {
	t.Helper()
	dsn, err := sqlstore.SQLiteDSN(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestNilHandles(t *testing.T) {
	ctx := context.Background()
	if _, err := sqlstore.NewSQLite(ctx, nil); err == nil {
		t.Error("NewSQLite(nil) succeeded")
	}
	if _, err := sqlstore.NewPostgres(ctx, nil); err == nil {
		t.Error("NewPostgres(nil) succeeded")
	}
}

func TestOpenSQLiteRefusesNonFilePaths(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro", filepath.Join(t.TempDir(), "missing-dir", "x.db")} {
		if db, err := sqlstore.OpenSQLite(context.Background(), p); err == nil {
			db.Close()
			t.Errorf("OpenSQLite(%q) succeeded", p)
		}
	}
}
