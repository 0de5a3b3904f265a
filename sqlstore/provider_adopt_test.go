package sqlstore_test

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/sqlstore"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// The provider's records that the adoption tests write with one store
// and read back with another. Their times are the store's clock,
// adoptTime, so that they read back the same every time.
var adoptTime = time.Date(2031, 2, 3, 4, 5, 6, 789012000, time.UTC)

// adoptKey is a fixed public key, as a JWK, and its thumbprint.
func adoptKey(seed byte) (json.RawMessage, string) {
	pub := ed25519.NewKeyFromSeed(make32(seed)).Public().(ed25519.PublicKey)
	return agentauthtest.PublicJWK(pub), agentauthtest.Thumbprint(pub)
}

func make32(b byte) []byte {
	s := make([]byte, ed25519.SeedSize)
	for i := range s {
		s[i] = b
	}
	return s
}

var adoptNonceExpiry = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

func wantProviderRecords() (*store.Host, *store.Agent, *store.Approval, *store.Passkey) {
	hostKey, hostTP := adoptKey(1)
	agentKey, agentTP := adoptKey(2)
	expires := adoptTime.Add(30 * 24 * time.Hour)
	h := &store.Host{ID: "hst_1", Name: "laptop", PublicKey: hostKey, Thumbprint: hostTP, UserID: "usr_1",
		DefaultCapabilities: []string{"balance"}, Status: agentcap.StatusActive, ActivatedAt: &adoptTime,
		CreatedAt: adoptTime, UpdatedAt: adoptTime}
	a := &store.Agent{ID: "agt_1", Name: "assistant", HostID: "hst_1", UserID: "usr_1", Mode: agentcap.ModeDelegated,
		Status: agentcap.StatusActive, AgentKey: store.AgentKey{PublicKey: agentKey, Thumbprint: agentTP},
		ActivatedAt: &adoptTime, ExpiresAt: &expires, CreatedAt: adoptTime, UpdatedAt: adoptTime,
		Grants: []store.Grant{
			{Capability: "balance", Status: agentcap.StatusActive, GrantedBy: "usr_1", CreatedAt: adoptTime, UpdatedAt: adoptTime},
			{Capability: "transfer", Status: agentcap.StatusActive, GrantedBy: "usr_1", Reason: "rent",
				Constraints: map[string]json.RawMessage{"amount": json.RawMessage(`{"max":1.50}`)},
				ExpiresAt:   &expires, CreatedAt: adoptTime, UpdatedAt: adoptTime},
		}}
	ap := &store.Approval{ID: "apr_1", Method: "device_authorization", AgentID: "agt_1", UserID: "usr_1",
		Capabilities: []store.RequestedCapability{{Name: "transfer", Constraints: map[string]json.RawMessage{"amount": json.RawMessage(`{"max":9}`)}}},
		Status:       "pending", Interval: 5 * time.Second, ExpiresAt: expires, BindingMessage: "pay rent",
		Call:      &store.Call{Capability: "transfer", Arguments: json.RawMessage(`{"amount":9}`), Audience: "https://bank.example/x", Preview: json.RawMessage(`{"text":"Pay 9"}`)},
		CreatedAt: adoptTime, UpdatedAt: adoptTime}
	pk := &store.Passkey{ID: "pk_1", UserID: "usr_1", UserHandle: "aGFuZGxl", Name: "phone",
		Credential: json.RawMessage(`{"counter":3}`), CreatedAt: adoptTime}
	return h, a, ap, pk
}

// fillProvider writes the records into s, whose clock reads adoptTime.
func fillProvider(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	h, a, ap, pk := wantProviderRecords()
	ap.UserCode = "WDJB-MJHT"
	for _, err := range []error{
		s.CreateHost(ctx, h),
		s.CreateAgent(ctx, a),
		s.CreateApproval(ctx, ap),
		s.CreatePasskey(ctx, pk),
		s.UseNonce(ctx, "jti-1", adoptNonceExpiry),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// checkProvider reads back through s what fillProvider wrote.
func checkProvider(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	h, a, ap, pk := wantProviderRecords()
	if got, err := s.GetHost(ctx, h.ID); err != nil || !cmp.Equal(h, got) {
		t.Errorf("host: %v %s", err, cmp.Diff(h, got))
	}
	if got, err := s.GetAgent(ctx, a.ID); err != nil || !cmp.Equal(a, got) {
		t.Errorf("agent: %v %s", err, cmp.Diff(a, got))
	}
	if got, err := s.ApprovalByUserCode(ctx, "WDJB-MJHT"); err != nil || !cmp.Equal(ap, got) {
		t.Errorf("approval: %v %s", err, cmp.Diff(ap, got))
	}
	if got, err := s.ListPasskeys(ctx, "usr_1"); err != nil || !cmp.Equal([]*store.Passkey{pk}, got) {
		t.Errorf("passkeys: %v %s", err, cmp.Diff([]*store.Passkey{pk}, got))
	}
	if err := s.UseNonce(ctx, "jti-1", adoptNonceExpiry); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a nonce used before the move: %v, want ErrConflict", err)
	}
}

// column returns the one column of the rows of query.
func column[T any](t *testing.T, db *sql.DB, query string) []T {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// testdata/provider-v5.db was written by agentauth/store/sqlitestore
// (all five of its versions) and audit/sqlitestore, as the example bank
// ran them on one file: the records of fillProvider and one audit record.
// sqlstore adopts it with its rows, and opens it again unchanged.
func TestAdoptProviderSQLite(t *testing.T) {
	ctx := context.Background()
	old, err := os.ReadFile("testdata/provider-v5.db")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bank.db")
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		db, err := sqlstore.OpenSQLite(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		checkProvider(t, sqlstore.ProviderWithClock(db, func() time.Time { return adoptTime }))
		page, err := db.Audit().Query(ctx, audit.Query{})
		if err != nil || len(page.Records) != 1 || page.Records[0].ID != "a1" {
			t.Errorf("round %d: audit records %+v, %v", round, page.Records, err)
		}
		checkVersions(t, db.SQL())
		if got := column[int](t, db.SQL(), `SELECT version FROM agentauth_schema_migrations ORDER BY version`); !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
			t.Errorf("agentauth_schema_migrations now records %v; want it left as it was", got)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// oldProviderSchema builds the provider's schema on db as the old
// packages did, with the first n of their migration files, each recorded
// in agentauth_schema_migrations.
func oldProviderSchema(t *testing.T, db *sql.DB, dir string, n int) {
	t.Helper()
	names, texts := sqlstore.ProviderSQL(dir)
	if len(names) != 5 {
		t.Fatalf("%d provider migration files, want the 5 of the old packages", len(names))
	}
	insert := `INSERT INTO agentauth_schema_migrations (version, name, applied_at) VALUES (?, ?, 0)`
	if dir == "postgres" {
		insert = `INSERT INTO agentauth_schema_migrations (version, name, applied_at) VALUES ($1, $2, 0)`
	}
	if _, err := db.Exec(`CREATE TABLE agentauth_schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := db.Exec(texts[i]); err != nil {
			t.Fatalf("%s: %v", names[i], err)
		}
		if _, err := db.Exec(insert, i+1, names[i]); err != nil {
			t.Fatal(err)
		}
	}
}

// A database at an older version of the provider's schema (before
// passkeys) has the versions it holds adopted and the others run.
func TestAdoptProviderPartly(t *testing.T) {
	ctx := context.Background()
	raw := sqliteHandle(t, filepath.Join(t.TempDir(), "old.db"))
	oldProviderSchema(t, raw, "sqlite", 3)
	hostKey, _ := adoptKey(1)
	if err := sqlstore.ProviderOn(raw, false, nil).CreateHost(ctx, &store.Host{ID: "hst_old", PublicKey: hostKey, Status: agentcap.StatusActive}); err == nil {
		t.Fatal("a host was written before version 5 added its OAuth client column")
	}
	db, err := sqlstore.NewSQLite(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkVersions(t, db.SQL())
	sqlstore.ProviderWithClock(db, func() time.Time { return adoptTime })
	fillProvider(t, db.Provider())
	checkProvider(t, db.Provider())
}

// A PostgreSQL schema built by the old package's SQL, with records in
// it, is adopted with its rows.
func TestAdoptProviderPostgres(t *testing.T) {
	newPool := servicetest.PostgresSchema(t)
	ctx := context.Background()
	raw := stdlib.OpenDBFromPool(newPool())
	defer raw.Close()
	oldProviderSchema(t, raw, "postgres", 5)
	fillProvider(t, sqlstore.ProviderOn(raw, true, func() time.Time { return adoptTime }))
	for range 2 {
		db, err := sqlstore.NewPostgres(ctx, newPool())
		if err != nil {
			t.Fatal(err)
		}
		checkProvider(t, sqlstore.ProviderWithClock(db, func() time.Time { return adoptTime }))
		checkVersions(t, db.SQL())
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A fresh database gets every table.
func TestFreshTables(t *testing.T) {
	want := []string{
		"agentauth_agents", "agentauth_approvals", "agentauth_grants", "agentauth_hosts", "agentauth_nonces", "agentauth_passkeys",
		"agentcap_audit", "agentcap_confirmations", "agentcap_idempotency", "agentcap_jobs", "agentcap_store_migrations",
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := b.fresh(t)(t)
			q := `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`
			if b.name == "PostgreSQL" {
				q = `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`
			}
			if diff := cmp.Diff(want, column[string](t, db.SQL(), q)); diff != "" {
				t.Errorf("tables (-want +got):\n%s", diff)
			}
			checkVersions(t, db.SQL())
		})
	}
}
