package sqlstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentcap/agentcap/agentauth/store"
	providersqlite "github.com/agentcap/agentcap/agentauth/store/sqlitestore"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/sqlstore"
)

// On the provider store's SQLite handle, the stores share the file; the
// second round finds the schema up to date; closing the DB leaves the
// handle open.
func TestNewSQLiteOnProviderStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "provider.db")
	for round := range 2 {
		ps, err := providersqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		db, err := sqlstore.NewSQLite(ctx, ps.DB())
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
		checkVersions(t, db.SQL())
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := ps.GetHost(ctx, "h0"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("provider store after the DB closed: %v", err)
		}
		if err := ps.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNilHandles(t *testing.T) {
	ctx := context.Background()
	if _, err := sqlstore.NewSQLite(ctx, nil); err == nil {
		t.Error("NewSQLite(nil) succeeded")
	}
	if _, err := sqlstore.NewPostgres(ctx, nil); err == nil {
		t.Error("NewPostgres(nil) succeeded")
	}
	for _, p := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro"} {
		if db, err := sqlstore.OpenSQLite(ctx, p); err == nil {
			db.Close()
			t.Errorf("OpenSQLite(%q) succeeded", p)
		}
	}
}
