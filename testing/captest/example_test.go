package captest_test

import (
	"context"
	"fmt"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/testing/captest"
)

// exampleT stands in for *testing.T in these examples.
type exampleT struct{}

func (exampleT) Helper()                        {}
func (exampleT) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

type workspace struct{ Member bool }

type renameIn struct {
	Name string `json:"name" minLength:"1" maxLength:"40"`
}

type renameOut struct {
	Name string `json:"name"`
}

var codeNotAMember = agentcap.NewCode("not_a_member", agentcap.CodeUnauthorized)

var rename = core.MustDefine("workspace.rename", "Rename the workspace.",
	func(_ context.Context, ws workspace, in renameIn) (renameOut, error) {
		if !ws.Member {
			return renameOut{}, agentcap.NewError(codeNotAMember, "you are not a member of this workspace")
		}
		return renameOut(in), nil
	})

func ExampleNewExecutor() {
	newContext := func(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (workspace, error) {
		return workspace{Member: id != nil && id.UserID == "alice"}, nil
	}
	exec := captest.NewExecutor(exampleT{}, newContext, core.Config{}, rename)
	fmt.Println(exec.Registry().Len())
	// Output: 1
}

func ExampleStatic() {
	exec := captest.NewExecutor(exampleT{}, captest.Static(workspace{Member: true}), core.Config{}, rename)
	res := captest.Run(exampleT{}, exec, "workspace.rename", &auth.Identity{Subject: "anyone"}, map[string]string{"name": "Ops"})
	fmt.Println(string(res.Output))
	// Output: {"name":"Ops"}
}

func ExampleRun() {
	exec := captest.NewExecutor(exampleT{}, captest.Static(workspace{Member: false}), core.Config{}, rename)

	res := captest.Run(exampleT{}, exec, "workspace.rename", bob, `{"name":"Ops"}`)
	fmt.Println(res.Status, res.Code)

	res = captest.Run(exampleT{}, exec, "workspace.rename", bob, `{"Name":"Ops"}`)
	fmt.Println(res.Status, res.Code, len(res.Err.Details))
	// Output:
	// 403 not_a_member
	// 400 invalid_request 2
}

// shortNames is an auth.Authorizer that admits short names only.
type shortNames struct{}

func (shortNames) Authorize(_ context.Context, call *auth.Call) error {
	if len(call.Input.(renameIn).Name) > 3 {
		return agentcap.NewError(agentcap.CodeUnauthorized, "names are limited to 3 letters here")
	}
	return nil
}
func (shortNames) GrantStatus(string) string     { return "" }
func (shortNames) Recheck(context.Context) error { return nil }

// ExampleRun_authorizer runs a capability for a caller whose Authorizer
// refuses the call, as a transport's verifier would have it.
func ExampleRun_authorizer() {
	exec := captest.NewExecutor(exampleT{}, captest.Static(workspace{Member: true}), core.Config{}, rename)
	carol := &auth.Identity{Subject: "carol", UserID: "carol", Authorizer: shortNames{}}
	res := captest.Run(exampleT{}, exec, "workspace.rename", carol, `{"name":"Operations"}`)
	fmt.Println(res.Status, res.Code)
	// Output: 403 unauthorized
}

func ExampleResult_Decode() {
	exec := captest.NewExecutor(exampleT{}, captest.Static(workspace{Member: true}), core.Config{}, rename)
	var out renameOut
	captest.Run(exampleT{}, exec, "workspace.rename", alice, renameIn{Name: "Ops"}).Decode(exampleT{}, &out)
	fmt.Println(out.Name)
	// Output: Ops
}

func ExampleCall() {
	exec := captest.NewExecutor(exampleT{}, captest.Static(workspace{Member: false}), core.Config{}, rename)
	_, code := captest.Call(exec, rename, bob, renameIn{Name: "Ops"})
	fmt.Println(code)
	// Output: not_a_member
}

var (
	alice = &auth.Identity{Subject: "alice", UserID: "alice"}
	bob   = &auth.Identity{Subject: "bob", UserID: "bob"}
)
