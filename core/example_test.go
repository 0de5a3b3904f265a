package core_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentcap/agentcap/core"
)

// Account is the application's view of the caller, rebuilt for every call
// from the application's own data.
type Account struct {
	UserID string
}

// Caller is the verified principal a transport hands to the executor.
type Caller struct {
	Subject string
}

type BalanceIn struct {
	AccountID string `json:"account_id" description:"The account to read." minLength:"1"`
}

type BalanceOut struct {
	AccountID string `json:"account_id"`
	Balance   string `json:"balance"`
}

func checkBalance(_ context.Context, acct Account, in BalanceIn) (BalanceOut, error) {
	if acct.UserID != "user_alice" || in.AccountID != "acc_123" {
		return BalanceOut{}, core.NotFound("account_not_found", "no such account")
	}
	return BalanceOut{AccountID: in.AccountID, Balance: "5000.00"}, nil
}

func ExampleDefine() {
	balance, err := core.Define("check_balance", "Read the balance of one of your accounts.", checkBalance,
		core.WithRisk(core.RiskLow), core.WithTags("accounts"))
	if err != nil {
		panic(err)
	}
	fmt.Println(balance.Definition().Name(), balance.Definition().InputFields())
	fmt.Println(string(balance.Definition().InputSchema()) != "")
	// Output:
	// check_balance [account_id]
	// true
}

func ExampleNewRegistry() {
	reg, err := core.NewRegistry(
		core.MustDefine("check_balance", "Read a balance.", checkBalance),
		core.MustDefine("check_balance", "Read a balance again.", checkBalance),
	)
	fmt.Println(reg == nil, err)
	// Output:
	// true agentcap: capability "check_balance": defined more than once
}

func ExampleNewExecutor() {
	reg := core.MustRegistry(core.MustDefine("check_balance", "Read a balance.", checkBalance))
	exec, err := core.NewExecutor(reg, core.ExecutorConfig[Account, Caller]{
		// The security boundary: map the verified subject to the
		// application's own user, never trusting anything the caller sent.
		CreateContext: func(_ context.Context, c Caller, _ *core.Definition, _ any) (Account, error) {
			if c.Subject != "alice" {
				return Account{}, core.Forbidden("unknown_user", "unknown user")
			}
			return Account{UserID: "user_alice"}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(exec.Registry().Len())
	// Output: 1
}

func ExampleExecutor_ExecuteDynamic() {
	reg := core.MustRegistry(core.MustDefine("check_balance", "Read a balance.", checkBalance))
	exec := core.MustExecutor(reg, core.ExecutorConfig[Account, Caller]{
		CreateContext: func(context.Context, Caller, *core.Definition, any) (Account, error) {
			return Account{UserID: "user_alice"}, nil
		},
	})
	ctx := context.Background()

	out, err := exec.ExecuteDynamic(ctx, "check_balance", Caller{Subject: "alice"}, []byte(`{"account_id":"acc_123"}`), nil)
	fmt.Println(string(out), err)

	_, err = exec.ExecuteDynamic(ctx, "check_balance", Caller{Subject: "alice"}, []byte(`{"Account_ID":"acc_123"}`), nil)
	var ce *core.Error
	errors.As(err, &ce)
	fmt.Println(ce.HTTPStatus(), ce.WireCode(), ce.Details)

	_, err = exec.ExecuteDynamic(ctx, "check_balance", Caller{Subject: "alice"}, []byte(`{"account_id":"acc_999"}`), nil)
	errors.As(err, &ce)
	fmt.Println(ce.HTTPStatus(), ce.WireCode(), ce.Message)
	// Output:
	// {"account_id":"acc_123","balance":"5000.00"} <nil>
	// 400 invalid_request [{/Account_ID unknown field} {/account_id missing required field}]
	// 404 account_not_found no such account
}

func ExampleLazy() {
	lazy := core.Lazy(func(ctx context.Context) (*core.Executor[Account, Caller], error) {
		// Open databases, load configuration... only when first needed.
		reg, err := core.NewRegistry(core.MustDefine("check_balance", "Read a balance.", checkBalance))
		if err != nil {
			return nil, err
		}
		return core.NewExecutor(reg, core.ExecutorConfig[Account, Caller]{
			CreateContext: func(context.Context, Caller, *core.Definition, any) (Account, error) {
				return Account{UserID: "user_alice"}, nil
			},
		})
	})
	exec, err := lazy.Get(context.Background())
	again, _ := lazy.Get(context.Background())
	fmt.Println(err, exec == again)
	// Output: <nil> true
}
