package sqlitestore_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/audit/audittest"
	"github.com/agentcap/agentcap/audit/sqlitestore"
	"github.com/agentcap/agentcap/sqlstore"
)

func open(t *testing.T, path string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	audittest.Run(t, func(t *testing.T) audit.Store { return open(t, filepath.Join(t.TempDir(), "audit.db")) })
}

func TestAppendOnly(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "audit.db"))
	ctx := context.Background()
	if err := s.Write(ctx, audit.Record{ID: "x", Event: "e", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	_, err := s.DB().ExecContext(ctx, `UPDATE `+sqlitestore.Table+` SET outcome = 'unauthorized'`)
	if err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("update: %v, want the append-only refusal", err)
	}
}

// The audit table lives in the database of the provider's records (a
// sqlstore.DB), and the audit store opens on its handle, again when both
// are reopened.
func TestWithProviderStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "provider.db")
	for round := range 2 {
		db, err := sqlstore.OpenSQLite(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		ps := db.Provider()
		as, err := sqlitestore.New(ctx, db.SQL())
		if err != nil {
			t.Fatal(err)
		}
		if err := as.Write(ctx, audit.Record{Event: audit.EventHostRegistered, Outcome: audit.OutcomeOK, HostID: "h"}); err != nil {
			t.Fatal(err)
		}
		page, err := as.Query(ctx, audit.Query{Event: audit.EventHostRegistered})
		if err != nil || len(page.Records) != round+1 {
			t.Fatalf("round %d: %d records, %v", round, len(page.Records), err)
		}
		if err := as.Close(); err != nil {
			t.Fatal(err)
		}
		// Closing the audit store leaves the provider's handle open.
		if _, err := ps.GetHost(ctx, "h0"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("provider store after the audit store closed: %v", err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
