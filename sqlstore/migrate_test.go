package sqlstore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentcap/agentcap/audit"
	auditpg "github.com/agentcap/agentcap/audit/pgstore"
	auditsqlite "github.com/agentcap/agentcap/audit/sqlitestore"
	"github.com/agentcap/agentcap/confirm"
	confirmpg "github.com/agentcap/agentcap/confirm/pgstore"
	confirmsqlite "github.com/agentcap/agentcap/confirm/sqlitestore"
	"github.com/agentcap/agentcap/idempotency"
	idempg "github.com/agentcap/agentcap/idempotency/pgstore"
	idemsqlite "github.com/agentcap/agentcap/idempotency/sqlitestore"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/jobs"
	jobspg "github.com/agentcap/agentcap/jobs/pgstore"
	jobssqlite "github.com/agentcap/agentcap/jobs/sqlitestore"
	"github.com/agentcap/agentcap/sqlstore"
)

// oldStores are the stores of the per-feature packages, on one database.
type oldStores struct {
	audit   audit.Store
	confirm confirm.Store
	idem    idempotency.Store
	jobs    jobs.Store
}

// fill writes one record in each store.
func fill(t *testing.T, s oldStores) {
	t.Helper()
	ctx := context.Background()
	if err := s.audit.Write(ctx, audit.Record{ID: "a1", Event: "call", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	hour := time.Now().Add(time.Hour)
	if err := s.confirm.Put(ctx, "c1", confirm.Record{Subject: "u", Capability: "cap", Digest: "d", Audience: "aud", ExpiresAt: hour}, hour); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := s.idem.Claim(ctx, "scope", "k1", "fp", "tok", time.Hour, 0); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	now := time.Now()
	if err := s.jobs.Create(ctx, &jobs.Record{ID: "j1", Owner: "o", Capability: "cap", State: jobs.StatePending,
		Instance: "i", LeaseUntil: now.Add(time.Hour), Created: now, Updated: now, Expires: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
}

// check reads back what fill wrote, through db; again is set when an
// earlier check spent the confirmation token.
func check(t *testing.T, db *sqlstore.DB, again bool) {
	t.Helper()
	ctx := context.Background()
	page, err := db.Audit().Query(ctx, audit.Query{})
	if err != nil || len(page.Records) != 1 || page.Records[0].ID != "a1" {
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

// A database written by the per-feature packages is adopted as it is,
// and opened again without change.
func TestAdoptSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentcap.db")
	ctx := context.Background()
	a, err := auditsqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := confirmsqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	i, err := idemsqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	j, err := jobssqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, oldStores{audit: a, confirm: c, idem: i, jobs: j})
	for _, s := range []interface{ Close() error }{a, c, i, j} {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
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
	a, err := auditpg.New(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	c, err := confirmpg.New(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	i, err := idempg.New(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	j, err := jobspg.New(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, oldStores{audit: a, confirm: c, idem: i, jobs: j})
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

// Instances starting together on one PostgreSQL database, one of them
// still on a per-feature package, migrate once.
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
				s, err := jobspg.New(ctx, pool)
				if err == nil {
					err = s.Close()
				}
				errs[i] = err
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

// The audit and idempotency packages, still used next to sqlstore while
// callers move, open a database sqlstore created: it recorded their
// versions as it created their tables.
func TestOldPackagesOpenFreshDatabase(t *testing.T) {
	ctx := context.Background()
	t.Run("SQLite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "agentcap.db")
		db, err := sqlstore.OpenSQLite(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		a, err := auditsqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		i, err := idemsqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer i.Close()
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		newPool := servicetest.PostgresSchema(t)
		db, err := sqlstore.NewPostgres(ctx, newPool())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		a, err := auditpg.New(ctx, newPool())
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		i, err := idempg.New(ctx, newPool())
		if err != nil {
			t.Fatal(err)
		}
		defer i.Close()
	})
}
