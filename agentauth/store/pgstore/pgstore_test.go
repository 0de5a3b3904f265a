package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/agentauth/store/pgstore"
	"github.com/agentcap/agentcap/storetest"
)

// dsn returns the PostgreSQL server named by AGENTCAP_POSTGRES_DSN. Without
// it the test is skipped, except under CI, where these tests must run.
func dsn(t testing.TB) string {
	t.Helper()
	d := os.Getenv("AGENTCAP_POSTGRES_DSN")
	if d == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("AGENTCAP_POSTGRES_DSN is not set; CI must run the PostgreSQL store tests against a loopback server")
		}
		t.Skip("AGENTCAP_POSTGRES_DSN is not set; start PostgreSQL on loopback and set it to run these tests")
	}
	return d
}

// schemaPool creates a schema of its own for the test and returns a pool
// whose connections use it. The schema is dropped when the test ends.
func schemaPool(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgxpool.New(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "agentcap_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		admin.Close()
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		admin.Close()
	})
	return pool, schema
}

func open(t testing.TB) *pgstore.Store {
	t.Helper()
	pool, _ := schemaPool(t)
	s, err := pgstore.New(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	storetest.Provider(t, func(t *testing.T) store.Store { return open(t) })
}

func BenchmarkStore(b *testing.B) {
	storetest.BenchProvider(b, func(b *testing.B) store.Store { return open(b) })
}

// TestMigrateOnce: stores opened together on one schema apply the
// migrations once, and reopening applies nothing.
func TestMigrateOnce(t *testing.T) {
	pool, _ := schemaPool(t)
	ctx := context.Background()
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			s, err := pgstore.New(ctx, pool)
			if err == nil {
				err = s.Close()
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var n int
	files, _ := os.ReadDir("migrations")
	if err := pool.QueryRow(ctx, `SELECT COUNT(*) FROM agentauth_schema_migrations`).Scan(&n); err != nil || n != len(files) {
		t.Errorf("migrations recorded: %d, %v; want %d, one per file", n, err, len(files))
	}
	if _, err := pool.Exec(ctx, `INSERT INTO agentauth_schema_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	if s, err := pgstore.New(ctx, pool); err == nil {
		s.Close()
		t.Error("a schema from a newer version was accepted")
	}
	if _, err := pgstore.New(ctx, nil); err == nil {
		t.Error("nil pool accepted")
	}
}

// TestOpenOwnsItsPool: Open with a DSN naming a schema through
// search_path, and Close closes the pool.
func TestOpenOwnsItsPool(t *testing.T) {
	_, schema := schemaPool(t)
	cfg, err := pgxpool.ParseConfig(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	ctx := context.Background()
	s, err := pgstore.Open(ctx, cfg.ConnString()+"&search_path="+schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetHost(ctx, "none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetHost: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetHost(ctx, "none"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("after Close: %v, want a closed-database error", err)
	}
	if _, err := pgstore.Open(ctx, "postgres://127.0.0.1:1/x?connect_timeout=1&sslmode=disable"); err == nil {
		t.Error("Open of an unreachable server succeeded")
	}
}
