package sqlitestore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/idempotency/sqlitestore"
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
	paths := map[idempotency.Store]string{}
	storetest.Idempotency(t, storetest.IdempotencyFactory{
		New: func(t *testing.T) idempotency.Store {
			path := filepath.Join(t.TempDir(), "idem.db")
			s := open(t, path)
			paths[s] = path
			return s
		},
		Reopen: func(t *testing.T, s idempotency.Store) idempotency.Store { return open(t, paths[s]) },
	})
}

func TestSweep(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "idem.db"))
	ctx := context.Background()
	if claimed, _, err := s.Claim(ctx, "agt_1", "k", "fp", "tok", 1, 0); !claimed || err != nil {
		t.Fatal(claimed, err)
	}
	for {
		n, err := s.Sweep(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return
		}
	}
}

// TestMigratesKeysWithoutScope: a file written before keys had a scope
// is brought up to date at Open; its keys are still answered, and count
// for no scope.
func TestMigratesKeysWithoutScope(t *testing.T) {
	path := filepath.Join(t.TempDir(), "idem.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE TABLE agentcap_idempotency (idem_key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, token TEXT NOT NULL,
			done INTEGER NOT NULL, status INTEGER NOT NULL, header TEXT, body TEXT, expires_at BIGINT NOT NULL)`,
		`CREATE INDEX agentcap_idempotency_expires ON agentcap_idempotency (expires_at)`,
		`INSERT INTO agentcap_idempotency VALUES ('5:agt_1:old', 'fp', 'tok', 1, 200, NULL, '{}', ` + strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10) + `)`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	_ = db.Close()
	s := open(t, path)
	ctx := context.Background()
	claimed, rec, err := s.Claim(ctx, "agt_1", "5:agt_1:old", "fp", "tok2", time.Minute, 1)
	if err != nil || claimed || rec == nil || !rec.Done || string(rec.Body) != "{}" {
		t.Fatalf("the old key: %v %+v %v", claimed, rec, err)
	}
	if claimed, _, err := s.Claim(ctx, "agt_1", "5:agt_1:new", "fp", "tok3", time.Minute, 1); !claimed || err != nil {
		t.Fatalf("a new key of the scope: %v %v", claimed, err)
	}
	// Opened again, nothing more is migrated.
	_ = open(t, path)
}
