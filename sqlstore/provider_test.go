package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/internal/sqlutil"
	"github.com/agentcap/agentcap/sqlstore"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// Every connection of a file OpenSQLite opened has the pragmas the
// stores rely on: write-ahead logging, foreign keys (the provider's
// cascades) and the busy timeout.
func TestSQLitePragmas(t *testing.T) {
	ctx := context.Background()
	db, err := sqlstore.OpenSQLite(ctx, filepath.Join(t.TempDir(), "agentcap.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conns := make([]*sql.Conn, 3)
	for i := range conns {
		c, err := db.SQL().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	for i, c := range conns {
		var mode string
		var fk, busy int
		if err := c.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
			t.Errorf("conn %d: journal_mode %q, %v", i, mode, err)
		}
		if err := c.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
			t.Errorf("conn %d: foreign_keys %d, %v", i, fk, err)
		}
		if err := c.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil || time.Duration(busy)*time.Millisecond != sqlutil.SQLiteBusyTimeout {
			t.Errorf("conn %d: busy_timeout %d, %v", i, busy, err)
		}
	}
}

// Two DBs on one file (two processes) see each other's provider records,
// and the loser of a race still loses.
func TestTwoDBsOneFile(t *testing.T) {
	ctx := context.Background()
	open := backends[0].fresh(t)
	a, b := open(t).Provider(), open(t).Provider()
	h := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1"})
	if err := a.CreateHost(ctx, &store.Host{ID: "hst_1", PublicKey: h.PublicJWK(), Status: agentcap.StatusPending}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.UpdateHostStatus(ctx, "hst_1", []string{agentcap.StatusPending}, agentcap.StatusActive); err != nil {
		t.Fatal(err)
	}
	if _, err := a.UpdateHostStatus(ctx, "hst_1", []string{agentcap.StatusPending}, agentcap.StatusRejected); err == nil {
		t.Error("the second approval of one host succeeded")
	}
}

// SetClock gives the provider's records and the audit trail their
// present.
func TestSetClock(t *testing.T) {
	fixed := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	db := backends[0].fresh(t)(t)
	db.SetClock(func() time.Time { return fixed })
	s := db.Provider()
	h := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1"})
	ctx := context.Background()
	if err := db.Audit().Write(ctx, audit.Record{Event: "e", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	if page, err := db.Audit().Query(ctx, audit.Query{}); err != nil || len(page.Records) != 1 || !page.Records[0].Time.Equal(fixed) {
		t.Errorf("audit record: %+v, %v; want its time from the clock", page, err)
	}
	if err := s.CreateHost(ctx, &store.Host{ID: "hst_1", PublicKey: h.PublicJWK(), Status: agentcap.StatusActive}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetHost(ctx, "hst_1")
	if err != nil || !got.CreatedAt.Equal(fixed) || !got.UpdatedAt.Equal(fixed) {
		t.Errorf("times from the clock: %v %v, %v", got.CreatedAt, got.UpdatedAt, err)
	}
}

// The migration waits for the advisory lock agentauth/store/pgstore
// took around its own migrations, so that an instance still on it does
// not create the provider's tables at the same moment.
func TestPostgresTakesTheProviderLock(t *testing.T) {
	newPool := servicetest.PostgresSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	holder := newPool()
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	const key = `hashtext('agentcap.agentauth.migrate.' || current_schema())::bigint`
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(`+key+`)`); err != nil {
		t.Fatal(err)
	}
	var want int64
	if err := tx.QueryRow(ctx, `SELECT `+key).Scan(&want); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		db, err := sqlstore.NewPostgres(ctx, newPool())
		if err == nil {
			err = db.Close()
		}
		done <- err
	}()
	// Wait until a session waits for that very lock, then let it go.
	for {
		var waiting int
		if err := holder.QueryRow(ctx, `SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND ((classid::bigint << 32) | objid::bigint) = $1`, want).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("NewPostgres returned (%v) while the provider's lock was held", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// OpenPostgres, with a DSN naming a schema through search_path, owns its
// pool: Close closes it.
func TestOpenPostgresOwnsItsPool(t *testing.T) {
	newPool := servicetest.PostgresSchema(t)
	ctx := context.Background()
	var schema string
	if err := newPool().QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(servicetest.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlstore.OpenPostgres(ctx, cfg.ConnString()+"&search_path="+schema)
	if err != nil {
		t.Fatal(err)
	}
	checkVersions(t, db.SQL())
	if _, err := db.Provider().GetHost(ctx, "none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetHost: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Provider().GetHost(ctx, "none"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("after Close: %v, want a closed-database error", err)
	}
	if _, err := sqlstore.OpenPostgres(ctx, "postgres://127.0.0.1:1/x?connect_timeout=1&sslmode=disable"); err == nil {
		t.Error("OpenPostgres of an unreachable server succeeded")
	}
}
