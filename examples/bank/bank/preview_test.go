package bank_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/examples/bank/bank"
	"github.com/agentcap/agentcap/testing/captest"
)

// A transfer's preview shows what it would move and the balances it
// would leave, refuses what the transfer would refuse, issues the token
// that confirms exactly that call, and moves nothing.
func TestTransferPreview(t *testing.T) {
	for _, l := range ledgers {
		t.Run(l.name, func(t *testing.T) {
			store := l.open(t)
			exec := execOn(t, store)
			cases := []struct {
				name, user, args string
				code             agentcap.Code
				want             map[string]any
			}{
				{"to another user's account", "user_alice",
					`{"source_account":"acc_123","destination_account":"acc_456","amount":100,"currency":"USD"}`, "",
					map[string]any{"source_account": "acc_123", "destination_account": "acc_456", "amount": 100.0, "currency": "USD",
						"source_currency": "USD", "debit": 100.0, "source_balance_after": 4900.0,
						"destination_currency": "USD", "credit": 100.0}},
				{"between own accounts, converted", "user_alice",
					`{"source_account":"acc_123","destination_account":"acc_124","amount":100,"currency":"usd"}`, "",
					map[string]any{"source_account": "acc_123", "destination_account": "acc_124", "amount": 100.0, "currency": "USD",
						"source_currency": "USD", "debit": 100.0, "source_balance_after": 4900.0,
						"destination_currency": "EUR", "credit": 92.0, "destination_balance_after": 1292.0}},
				{"in the destination's currency", "user_alice",
					`{"source_account":"acc_124","destination_account":"acc_123","amount":10,"currency":"USD"}`, "",
					map[string]any{"source_account": "acc_124", "destination_account": "acc_123", "amount": 10.0, "currency": "USD",
						"source_currency": "EUR", "debit": 9.2, "source_balance_after": 1190.8,
						"destination_currency": "USD", "credit": 10.0, "destination_balance_after": 5010.0}},
				{"insufficient funds", "user_bob",
					`{"source_account":"acc_456","destination_account":"acc_123","amount":300.01,"currency":"USD"}`, "insufficient_funds", nil},
				{"source not owned", "user_bob",
					`{"source_account":"acc_123","destination_account":"acc_456","amount":1,"currency":"USD"}`, "account_not_found", nil},
				{"unknown destination", "user_alice",
					`{"source_account":"acc_123","destination_account":"acc_000","amount":1,"currency":"USD"}`, "account_not_found", nil},
				{"same account", "user_alice",
					`{"source_account":"acc_123","destination_account":"acc_123","amount":1,"currency":"USD"}`, "invalid_request", nil},
			}
			for _, c := range cases {
				res, err := exec.Preview(context.Background(), "transfer_money", callerFor(c.user), []byte(c.args))
				if c.code != "" {
					if agentcap.CodeOf(err) != c.code {
						t.Errorf("%s: %v, want %s", c.name, err, c.code)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				var got map[string]any
				if err := json.Unmarshal(res.Data, &got); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(c.want, got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", c.name, diff)
				}
				if res.Confirmation == nil || res.Confirmation.Token == "" {
					t.Errorf("%s: no confirmation", c.name)
				}
			}
			got := []string{balance(t, store, "user_alice", "acc_123"), balance(t, store, "user_alice", "acc_124"), balance(t, store, "user_bob", "acc_456")}
			if diff := cmp.Diff([]string{"5000 USD", "1200 EUR", "300 USD"}, got); diff != "" {
				t.Errorf("a preview moved money (-want +got):\n%s", diff)
			}

			// The token confirms the previewed call, once, and no other.
			args := `{"source_account":"acc_123","destination_account":"acc_456","amount":100,"currency":"USD"}`
			res, err := exec.Preview(context.Background(), "transfer_money", callerFor("user_alice"), []byte(args))
			if err != nil {
				t.Fatal(err)
			}
			ctx := core.WithConfirmationToken(context.Background(), res.Confirmation.Token)
			other := `{"source_account":"acc_123","destination_account":"acc_456","amount":101,"currency":"USD"}`
			if _, err := exec.Execute(ctx, "transfer_money", callerFor("user_alice"), []byte(other)); agentcap.CodeOf(err) != "confirmation_mismatch" {
				t.Errorf("other amount: %v", err)
			}
			if _, err := exec.Execute(ctx, "transfer_money", callerFor("user_alice"), []byte(args)); err != nil {
				t.Errorf("confirmed transfer: %v", err)
			}
			if _, err := exec.Execute(ctx, "transfer_money", callerFor("user_alice"), []byte(args)); agentcap.CodeOf(err) != "confirmation_used" {
				t.Errorf("token used twice: %v", err)
			}
			if got := balance(t, store, "user_alice", "acc_123"); got != "4900 USD" {
				t.Errorf("after one confirmed transfer: %s", got)
			}
		})
	}
}

// A transfer that debits more than 1000 in the source account's currency
// waits for the account's owner; up to that, the agent's confirmation is
// enough.
func TestOwnerConfirmsBigTransfers(t *testing.T) {
	ctx := context.Background()
	exec := execOn(t, bank.NewStore())
	cases := []struct {
		name, user, args string
		owner            bool
		code             agentcap.Code
	}{
		{"1000 USD from dollars", "user_alice", `{"source_account":"acc_123","destination_account":"acc_456","amount":1000,"currency":"USD"}`, false, ""},
		{"1000.01 USD from dollars", "user_alice", `{"source_account":"acc_123","destination_account":"acc_456","amount":1000.01,"currency":"USD"}`, true, ""},
		// 920 EUR cost 1002.80 USD.
		{"920 EUR from dollars", "user_alice", `{"source_account":"acc_123","destination_account":"acc_456","amount":920,"currency":"eur"}`, true, ""},
		{"1000 EUR from euros", "user_alice", `{"source_account":"acc_124","destination_account":"acc_123","amount":1000,"currency":"EUR"}`, false, ""},
		// 1090 USD cost 1002.80 EUR.
		{"1090 USD from euros", "user_alice", `{"source_account":"acc_124","destination_account":"acc_123","amount":1090,"currency":"USD"}`, true, ""},
		{"someone else's account", "user_bob", `{"source_account":"acc_123","destination_account":"acc_456","amount":5000,"currency":"USD"}`, false, "account_not_found"},
	}
	for _, c := range cases {
		pv, err := exec.Preview(ctx, "transfer_money", callerFor(c.user), []byte(c.args))
		if c.code != "" {
			if agentcap.CodeOf(err) != c.code {
				t.Errorf("%s: preview %v, want %s", c.name, err, c.code)
			}
			continue
		}
		if err != nil || pv.HumanConfirmation != c.owner || (pv.Confirmation == nil) != c.owner {
			t.Errorf("%s: preview %+v %v, want the owner: %v", c.name, pv, err, c.owner)
		}
		r := captest.Run(t, exec, "transfer_money", callerFor(c.user), c.args)
		want := agentcap.CodeConfirmationRequired
		if c.owner {
			want = agentcap.CodeConfirmationPending
		}
		if r.Code != want {
			t.Errorf("%s: execute %s, want %s", c.name, r.Code, want)
		}
	}

	// What the owner is asked about: the call, and its preview.
	d, _ := desks.Load(exec)
	desk := d.(*ownerDesk)
	last := desk.asked[len(desk.asked)-1]
	if !last.Binding.Human || last.Binding.Subject != "agt_test" || last.Binding.Capability != "transfer_money" ||
		!strings.Contains(string(last.Preview), `"debit":1002.8`) {
		t.Errorf("asked %+v, preview %s", last.Binding, last.Preview)
	}

	// With no one to ask, big transfers are refused and small ones run.
	alone, err := bank.NewExecutor(bank.NewStore(), bank.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := confirmed(t, alone, "user_alice", "transfer_money", cases[1].args); r.Status != 403 || r.Code != "unauthorized" {
		t.Errorf("a big transfer with no one to ask: %d %s", r.Status, r.Code)
	}
	if r := confirmed(t, alone, "user_alice", "transfer_money", cases[0].args); r.Status != 200 {
		t.Errorf("a small transfer with no one to ask: %d %s", r.Status, r.Code)
	}
}
