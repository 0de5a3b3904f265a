package core_test

import (
	"context"
	"fmt"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
)

// Account is the application's view of the caller, rebuilt for every call
// from the application's own data.
type Account struct {
	UserID string
}

// CodeAccountNotFound is the application's own error code, answered like
// not_found (404).
var CodeAccountNotFound = agentcap.NewCode("account_not_found", agentcap.CodeNotFound)

type BalanceIn struct {
	AccountID string `json:"account_id" description:"The account to read." minLength:"1"`
}

type BalanceOut struct {
	AccountID string `json:"account_id"`
	Balance   string `json:"balance"`
}

func checkBalance(_ context.Context, acct Account, in BalanceIn) (BalanceOut, error) {
	if acct.UserID != "user_alice" || in.AccountID != "acc_123" {
		return BalanceOut{}, agentcap.NewError(CodeAccountNotFound, "no such account")
	}
	return BalanceOut{AccountID: in.AccountID, Balance: "5000.00"}, nil
}

// newAccount is the security boundary: it maps the verified identity to
// the application's own user, never trusting anything the caller sent.
func newAccount(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (Account, error) {
	if id == nil || id.UserID != "alice" {
		return Account{}, agentcap.NewError(agentcap.CodeUnauthorized, "unknown user")
	}
	return Account{UserID: "user_alice"}, nil
}

func ExampleDefine() {
	balance, err := core.Define("check_balance", "Read the balance of one of your accounts.", checkBalance,
		core.WithRisk(core.RiskLow), core.WithTags("accounts"))
	if err != nil {
		panic(err)
	}
	fmt.Println(balance.Definition().Name(), balance.Definition().Risk())
	fmt.Println(string(balance.Definition().InputSchema()))
	// Output:
	// check_balance low
	// {"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"account_id":{"type":"string","description":"The account to read.","minLength":1}},"required":["account_id"],"additionalProperties":false}
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
	// The application context type, Account, is inferred from newAccount.
	exec, err := core.NewExecutor(reg, newAccount, core.Config{})
	if err != nil {
		panic(err)
	}
	fmt.Println(exec.Registry().Len())
	// Output: 1
}

func ExampleExecutor_Execute() {
	reg := core.MustRegistry(core.MustDefine("check_balance", "Read a balance.", checkBalance))
	exec := core.MustExecutor(reg, newAccount, core.Config{})
	ctx := context.Background()
	// A transport's Verifier returns the identity of each request.
	alice := &auth.Identity{Subject: "agt_1", AgentID: "agt_1", UserID: "alice"}

	out, err := exec.Execute(ctx, "check_balance", alice, []byte(`{"account_id":"acc_123"}`))
	fmt.Println(string(out), err)

	_, err = exec.Execute(ctx, "check_balance", alice, []byte(`{"Account_ID":"acc_123"}`))
	e := agentcap.As(err)
	fmt.Println(e.HTTPStatus(), e.Code, e.Details)

	_, err = exec.Execute(ctx, "check_balance", alice, []byte(`{"account_id":"acc_999"}`))
	e = agentcap.As(err)
	fmt.Println(e.HTTPStatus(), e.Code, e.Message)

	_, err = exec.Execute(ctx, "check_balance", &auth.Identity{Subject: "agt_2", UserID: "mallory"}, []byte(`{"account_id":"acc_123"}`))
	e = agentcap.As(err)
	fmt.Println(e.HTTPStatus(), e.Code, e.Stage)
	// Output:
	// {"account_id":"acc_123","balance":"5000.00"} <nil>
	// 400 invalid_request [{/Account_ID unknown field} {/account_id missing required field}]
	// 404 account_not_found no such account
	// 403 unauthorized context
}

func ExampleCall() {
	balance := core.MustDefine("check_balance", "Read a balance.", checkBalance)
	exec := core.MustExecutor(core.MustRegistry(balance), newAccount, core.Config{})
	// In process, the input is typed and so is the result.
	out, err := core.Call(context.Background(), exec, balance, &auth.Identity{Subject: "agt_1", UserID: "alice"}, BalanceIn{AccountID: "acc_123"})
	fmt.Println(out.Balance, err)
	// Output: 5000.00 <nil>
}

func ExampleLazy() {
	reg := core.MustRegistry(core.MustDefine("check_balance", "Read a balance.", checkBalance))
	lazy := core.Lazy(reg, func(ctx context.Context) (*core.Executor, error) {
		// Open databases, load configuration... only when first needed.
		return core.NewExecutor(reg, newAccount, core.Config{})
	})
	// Listings need no executor.
	fmt.Println(lazy.Registry().Len(), lazy.Built() == nil)
	exec, err := lazy.Executor(context.Background())
	again, _ := lazy.Executor(context.Background())
	fmt.Println(err, exec == again, lazy.Built() == exec)
	// Output:
	// 1 true
	// <nil> true true
}
