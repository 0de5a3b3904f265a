package bank_test

import (
	"context"
	"errors"
	"math/big"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentcap/agentcap/examples/bank/bank"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/testing/captest"
)

// pgPool returns a pool on a fresh schema of the database named by
// AGENTCAP_POSTGRES_DSN, dropped when the test ends.
func pgPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	return servicetest.PostgresSchema(t)()
}

func newPGLedger(t *testing.T) bank.Ledger {
	t.Helper()
	l, err := bank.NewPGLedger(context.Background(), pgPool(t))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// ledgers are the ledgers the behaviour tests run against: the memory
// store, and PostgreSQL when AGENTCAP_POSTGRES_DSN names a database.
var ledgers = []struct {
	name string
	open func(t *testing.T) bank.Ledger
}{
	{"memory", func(*testing.T) bank.Ledger { return bank.NewStore() }},
	{"postgres", newPGLedger},
}

func TestPGLedgerSetUpOnce(t *testing.T) {
	pool := pgPool(t)
	ctx := context.Background()
	l, err := bank.NewPGLedger(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.TransferMoney(ctx, "user_alice", "acc_123", "acc_456", big.NewRat(10, 1), bank.USD); err != nil {
		t.Fatal(err)
	}
	// A second instance on the same database keeps the books as they
	// are: the demonstration data is added to an empty ledger only.
	again, err := bank.NewPGLedger(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if got := balance(t, again, "user_alice", "acc_123"); got != "4990 USD" {
		t.Errorf("balance after a second set-up: %s", got)
	}
	for _, l := range []bank.Ledger{bank.NewStore(), again} {
		jan, cur, err := l.History(ctx, "user_alice", "acc_123", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC))
		if err != nil || cur != bank.USD || len(jan) != 3 || jan[0].TransferID != "tr_demo_01" || jan[1].Amount != "-1200" {
			t.Errorf("%T: January's history: %+v %s %v", l, jan, cur, err)
		}
	}
	if _, err := bank.NewPGLedger(ctx, nil); err == nil {
		t.Error("a nil pool was accepted")
	}
}

func TestPGLedgerUnavailable(t *testing.T) {
	pool := pgPool(t)
	l, err := bank.NewPGLedger(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	pool.Close()
	if _, _, err := l.Balance(context.Background(), "user_alice", "acc_123"); !errors.Is(err, bank.ErrLedgerUnavailable) {
		t.Errorf("balance on a closed pool: %v, want ErrLedgerUnavailable", err)
	}
	exec := execOn(t, l)
	for name, args := range map[string]string{
		"check_balance":  `{"account_id":"acc_123"}`,
		"transfer_money": `{"source_account":"acc_123","destination_account":"acc_456","amount":1,"currency":"USD"}`,
	} {
		r := captest.Run(t, exec, name, callerFor("user_alice"), args)
		if r.Status != http.StatusServiceUnavailable || r.Code != "temporarily_unavailable" || r.Err.RetryAfter <= 0 {
			t.Errorf("%s on an unreachable ledger: %d %s (retry after %v)", name, r.Status, r.Code, r.Err.RetryAfter)
		}
	}
}
