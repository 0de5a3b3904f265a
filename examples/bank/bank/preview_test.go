package bank_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/core"
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
				code             string
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
				res, err := exec.PreviewDynamic(context.Background(), "transfer_money", callerFor(c.user), []byte(c.args), nil)
				if c.code != "" {
					if captest.Code(err) != c.code {
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
			res, err := exec.PreviewDynamic(context.Background(), "transfer_money", callerFor("user_alice"), []byte(args), nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx := core.WithConfirmationToken(context.Background(), res.Confirmation.Token)
			other := `{"source_account":"acc_123","destination_account":"acc_456","amount":101,"currency":"USD"}`
			if _, err := exec.ExecuteDynamic(ctx, "transfer_money", callerFor("user_alice"), []byte(other), nil); captest.Code(err) != "confirmation_mismatch" {
				t.Errorf("other amount: %v", err)
			}
			if _, err := exec.ExecuteDynamic(ctx, "transfer_money", callerFor("user_alice"), []byte(args), nil); err != nil {
				t.Errorf("confirmed transfer: %v", err)
			}
			if _, err := exec.ExecuteDynamic(ctx, "transfer_money", callerFor("user_alice"), []byte(args), nil); captest.Code(err) != "confirmation_used" {
				t.Errorf("token used twice: %v", err)
			}
			if got := balance(t, store, "user_alice", "acc_123"); got != "4900 USD" {
				t.Errorf("after one confirmed transfer: %s", got)
			}
		})
	}
}
