package sqlstore_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/sqlstore"
)

// check reads back, through db, the records of an old database (those of
// beforeRows); again is set when an earlier check spent the confirmation
// token.
func check(t *testing.T, db *sqlstore.DB, again bool) {
	t.Helper()
	ctx := context.Background()
	page, err := db.Audit().Query(ctx, audit.Query{})
	if err != nil || len(page.Records) != 1 || page.Records[0].ID != "a1" ||
		!page.Records[0].Time.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("audit: %+v, %v", page, err)
	}
	rec, ok, err := db.Confirm().Consume(ctx, "c1", confirm.Record{Subject: "u", Capability: "cap", Digest: "d", Audience: "aud"}, time.Now())
	if ok == again || err != nil || rec == nil || rec.Used != again {
		t.Errorf("confirm: %+v %v %v", rec, ok, err)
	}
	ok, held, err := db.Idempotency().Claim(ctx, "scope", "k1", "fp", "tok2", time.Hour, 0)
	if ok || err != nil || held == nil || held.Token != "tok" {
		t.Errorf("idempotency: %v %+v %v", ok, held, err)
	}
	// The key was stored with its scope, so it counts against a bound.
	if _, _, err := db.Idempotency().Claim(ctx, "scope", "k2", "fp", "tok3", time.Hour, 1); err != idempotency.ErrTooManyKeys {
		t.Errorf("bounded claim: %v, want ErrTooManyKeys", err)
	}
	j, err := db.Jobs().Get(ctx, "j1")
	if err != nil || j.Owner != "o" {
		t.Errorf("jobs: %+v %v", j, err)
	}
	checkVersions(t, db.SQL())
	if got := auditIndexes(t, db.SQL()); !slices.Equal(got, []string{"agentcap_audit_at", "agentcap_audit_user"}) {
		t.Errorf("audit indexes %q", got)
	}
	if _, err := db.SQL().ExecContext(ctx, `UPDATE `+sqlstore.AuditTable+` SET outcome = 'x'`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("update of the audit trail: %v, want the append-only refusal", err)
	}
}

func checkVersions(t *testing.T, db *sql.DB) {
	t.Helper()
	var n, max int
	if err := db.QueryRow(`SELECT COUNT(*), MAX(version) FROM `+sqlstore.MigrationsTable).Scan(&n, &max); err != nil {
		t.Fatal(err)
	}
	if n != sqlstore.SchemaVersion || max != sqlstore.SchemaVersion {
		t.Errorf("%d versions recorded, the last %d; want %d", n, max, sqlstore.SchemaVersion)
	}
}

// A database written by the per-feature packages that came before
// sqlstore is adopted as it is, and opened again without change.
func TestAdoptSQLite(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "before-sqlstore.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "agentcap.db")
	if err := os.WriteFile(path, fixture, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for n := range 2 {
		db, err := sqlstore.OpenSQLite(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		check(t, db, n > 0)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAdoptPostgres(t *testing.T) {
	newPool := servicetest.PostgresSchema(t)
	ctx := context.Background()
	pool := newPool()
	for _, stmts := range [][]string{beforeAuditPostgres, beforeConfirmPostgres, beforeIdempotencyPostgres, beforeJobsPostgres, beforeRows} {
		for _, stmt := range stmts {
			if _, err := pool.Exec(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
	}
	for n := range 2 {
		db, err := sqlstore.NewPostgres(ctx, newPool())
		if err != nil {
			t.Fatal(err)
		}
		check(t, db, n > 0)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A database whose idempotency table predates the key's scope (created
// before the per-feature package recorded versions) gets the column.
func TestAdoptUnversionedIdempotency(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentcap.db")
	ctx := context.Background()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE TABLE agentcap_idempotency (idem_key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, token TEXT NOT NULL, done INTEGER NOT NULL, status INTEGER NOT NULL, header TEXT, body TEXT, expires_at BIGINT NOT NULL)`,
		`INSERT INTO agentcap_idempotency VALUES ('old', 'fp', 'tok', 0, 0, NULL, NULL, 9999999999999)`,
	} {
		if _, err := raw.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	db, err := sqlstore.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ok, held, err := db.Idempotency().Claim(ctx, "", "old", "fp", "tok2", time.Hour, 0)
	if ok || err != nil || held == nil || held.Token != "tok" {
		t.Errorf("claim of the old key: %v %+v %v", ok, held, err)
	}
	// The old key has the empty scope: it counts for no bound.
	if ok, _, err := db.Idempotency().Claim(ctx, "agt_1", "new", "fp", "tok3", time.Hour, 1); !ok || err != nil {
		t.Errorf("a new key of a bounded scope: %v %v", ok, err)
	}
	checkVersions(t, db.SQL())
}

// A database migrated by a newer program is refused.
func TestNewerVersionRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentcap.db")
	ctx := context.Background()
	db, err := sqlstore.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().ExecContext(ctx, `INSERT INTO `+sqlstore.MigrationsTable+` (version, applied_at) VALUES (?, 0)`, sqlstore.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err := sqlstore.OpenSQLite(ctx, path); err == nil || !strings.Contains(err.Error(), "newer version") {
		if db != nil {
			db.Close()
		}
		t.Fatalf("open: %v, want the refusal of a newer schema", err)
	}
}

// Instances starting together on one PostgreSQL database migrate once,
// also next to an instance of a release before sqlstore creating the
// jobs table as jobs/pgstore did, under its own lock: sqlstore takes
// that lock too, so neither runs into the other's CREATE TABLE.
func TestInstancesStartTogether(t *testing.T) {
	newPool := servicetest.PostgresSchema(t)
	ctx := context.Background()
	pools := make([]*pgxpool.Pool, 5)
	for i := range pools {
		pools[i] = newPool()
	}
	errs := make([]error, len(pools))
	var wg sync.WaitGroup
	for i, pool := range pools {
		wg.Go(func() {
			if i == 0 {
				errs[i] = createBeforeJobs(ctx, pool)
				return
			}
			db, err := sqlstore.NewPostgres(ctx, pool)
			if err == nil {
				err = db.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("instance %d: %v", i, err)
		}
	}
	db, err := sqlstore.NewPostgres(ctx, newPool())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkVersions(t, db.SQL())
}

// createBeforeJobs creates the jobs table as jobs/pgstore did: in one
// transaction, under its lock.
func createBeforeJobs(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, stmt := range append([]string{beforeJobsLock}, beforeJobsPostgres...) {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}
