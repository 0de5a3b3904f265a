package sqlitestore_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/agentauth/store/sqlitestore"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

func TestOpenRefusesNonFilePaths(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro"} {
		if s, err := sqlitestore.Open(context.Background(), p); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
	if _, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "missing-dir", "x.db")); err == nil {
		t.Error("Open in a missing directory succeeded")
	}
}

// TestReopen: the data survives, migrations apply once, and the pragmas
// that the store relies on are in force on every connection.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentauth.db")
	s, err := sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	h := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1"})
	if err := s.CreateHost(ctx, &store.Host{ID: "hst_1", PublicKey: h.PublicJWK(), Status: agentcap.StatusActive}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if got, err := s.GetHost(ctx, "hst_1"); err != nil || got.Thumbprint != h.Thumbprint() {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
	var n int
	files, _ := os.ReadDir("migrations")
	if err := s.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM agentauth_schema_migrations`).Scan(&n); err != nil || n != len(files) {
		t.Errorf("migrations recorded: %d, %v; want %d, one per file", n, err, len(files))
	}
	// Several connections at once, each with the pragmas.
	conns := make([]*sql.Conn, 3)
	for i := range conns {
		c, err := s.DB().Conn(ctx)
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
		if err := c.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil || time.Duration(busy)*time.Millisecond != sqlitestore.BusyTimeout {
			t.Errorf("conn %d: busy_timeout %d, %v", i, busy, err)
		}
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentauth.db")
	s, err := sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, `INSERT INTO agentauth_schema_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := sqlitestore.Open(ctx, path); err == nil || !strings.Contains(err.Error(), "newer version") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("a database from a newer version: %v", err)
	}
}

// TestTwoStoresOneFile: two stores on one file (two processes) see each
// other's writes, and the losers of a race still lose.
func TestTwoStoresOneFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentauth.db")
	a, err := sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
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

func TestWithClock(t *testing.T) {
	fixed := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	s := open(t).WithClock(func() time.Time { return fixed })
	h := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1"})
	ctx := context.Background()
	if err := s.CreateHost(ctx, &store.Host{ID: "hst_1", PublicKey: h.PublicJWK(), Status: agentcap.StatusActive}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetHost(ctx, "hst_1")
	if err != nil || !got.CreatedAt.Equal(fixed) || !got.UpdatedAt.Equal(fixed) {
		t.Errorf("times from the clock: %v %v, %v", got.CreatedAt, got.UpdatedAt, err)
	}
}
