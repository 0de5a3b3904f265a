package pgstore_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/audit/audittest"
	"github.com/agentcap/agentcap/audit/pgstore"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/sqlstore"
)

func open(t *testing.T, pool *pgxpool.Pool) *pgstore.Store {
	t.Helper()
	s, err := pgstore.New(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	audittest.Run(t, func(t *testing.T) audit.Store { return open(t, servicetest.PostgresSchema(t)()) })
}

func TestAppendOnly(t *testing.T) {
	s := open(t, servicetest.PostgresSchema(t)())
	ctx := context.Background()
	if err := s.Write(ctx, audit.Record{ID: "x", Event: "e", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	_, err := s.DB().ExecContext(ctx, `UPDATE `+pgstore.Table+` SET outcome = 'unauthorized'`)
	if err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("update: %v, want the append-only refusal", err)
	}
}

// Instances starting together on one database, next to the provider's
// records (a sqlstore.DB) in the same pool, migrate once and share the
// trail.
func TestInstancesWithProviderStore(t *testing.T) {
	newPool := servicetest.PostgresSchema(t)
	ctx := context.Background()
	pool := newPool()
	db, err := sqlstore.NewPostgres(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	stores := make([]*pgstore.Store, 4)
	var wg sync.WaitGroup
	errs := make([]error, len(stores))
	for i := range stores {
		p := pool
		if i > 0 {
			p = newPool()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = pgstore.New(ctx, p)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	if err := stores[1].Write(ctx, audit.Record{Event: "e", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	page, err := stores[3].Query(ctx, audit.Query{})
	if err != nil || len(page.Records) != 1 {
		t.Fatalf("another instance reads %d records, %v", len(page.Records), err)
	}
}

func TestOpen(t *testing.T) {
	// Open in the test's own schema, named in the DSN.
	var schema string
	if err := servicetest.PostgresSchema(t)().QueryRow(context.Background(), `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	dsn := servicetest.PostgresDSN(t)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	s, err := pgstore.Open(context.Background(), dsn+sep+"search_path="+schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), audit.Record{Event: "e", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Query(context.Background(), audit.Query{}); err == nil {
		t.Error("query after Close succeeded")
	}
}
