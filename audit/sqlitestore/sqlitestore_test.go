package sqlitestore_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/agentauth/store"
	providersqlite "github.com/agentcap/agentcap/agentauth/store/sqlitestore"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/audit/sqlitestore"
	"github.com/agentcap/agentcap/storetest"
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
	storetest.Audit(t, func(t *testing.T) audit.Store { return open(t, filepath.Join(t.TempDir(), "audit.db")) })
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

// The audit table lives in the provider store's database, migrated when
// the audit store is opened on the provider store's handle, and again
// (as a no-op) when both are reopened.
func TestWithProviderStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "provider.db")
	for round := range 2 {
		ps, err := providersqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		as, err := sqlitestore.New(ctx, ps.DB())
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
		if err := ps.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
