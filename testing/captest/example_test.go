package captest_test

import (
	"context"
	"fmt"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/testing/captest"
)

// exampleT stands in for *testing.T in these examples.
type exampleT struct{}

func (exampleT) Helper()                        {}
func (exampleT) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

type workspace struct{ Member bool }

type user struct{ ID string }

type renameIn struct {
	Name string `json:"name" minLength:"1" maxLength:"40"`
}

type renameOut struct {
	Name string `json:"name"`
}

var rename = core.MustDefine("workspace.rename", "Rename the workspace.",
	func(_ context.Context, ws workspace, in renameIn) (renameOut, error) {
		if !ws.Member {
			return renameOut{}, core.Forbidden("not_a_member", "you are not a member of this workspace")
		}
		return renameOut(in), nil
	})

func ExampleNewExecutor() {
	resolve := func(_ context.Context, u user, _ *core.Definition, _ any) (workspace, error) {
		return workspace{Member: u.ID == "alice"}, nil
	}
	exec := captest.NewExecutor(exampleT{}, resolve, []core.Definer{rename})
	fmt.Println(exec.Registry().Len())
	// Output: 1
}

func ExampleStatic() {
	exec := captest.NewExecutor(exampleT{}, captest.Static[workspace, user](workspace{Member: true}), []core.Definer{rename})
	res := captest.Run(exampleT{}, exec, "workspace.rename", user{ID: "anyone"}, map[string]string{"name": "Ops"})
	fmt.Println(string(res.Output))
	// Output: {"name":"Ops"}
}

func ExampleRun() {
	exec := captest.NewExecutor(exampleT{}, captest.Static[workspace, user](workspace{Member: false}), []core.Definer{rename})

	res := captest.Run(exampleT{}, exec, "workspace.rename", user{ID: "bob"}, `{"name":"Ops"}`)
	fmt.Println(res.Status, res.Code)

	res = captest.Run(exampleT{}, exec, "workspace.rename", user{ID: "bob"}, `{"Name":"Ops"}`)
	fmt.Println(res.Status, res.Code, len(res.Err.Details))
	// Output:
	// 403 not_a_member
	// 400 invalid_request 2
}

func ExampleRunAuthorized() {
	exec := captest.NewExecutor(exampleT{}, captest.Static[workspace, user](workspace{Member: true}), []core.Definer{rename})
	onlyShortNames := func(_ context.Context, inv *core.Invocation) error {
		if len(inv.Input.(renameIn).Name) > 3 {
			return core.Forbidden("name_too_long", "names are limited to 3 letters here")
		}
		return nil
	}
	res := captest.RunAuthorized(exampleT{}, exec, "workspace.rename", user{ID: "alice"}, `{"name":"Operations"}`, onlyShortNames)
	fmt.Println(res.Code)
	// Output: name_too_long
}

func ExampleResult_Decode() {
	exec := captest.NewExecutor(exampleT{}, captest.Static[workspace, user](workspace{Member: true}), []core.Definer{rename})
	var out renameOut
	captest.Run(exampleT{}, exec, "workspace.rename", user{ID: "alice"}, renameIn{Name: "Ops"}).Decode(exampleT{}, &out)
	fmt.Println(out.Name)
	// Output: Ops
}

func ExampleCall() {
	exec := captest.NewExecutor(exampleT{}, captest.Static[workspace, user](workspace{Member: false}), []core.Definer{rename})
	_, code := captest.Call(exec, rename, user{ID: "bob"}, renameIn{Name: "Ops"})
	fmt.Println(code)
	// Output: not_a_member
}

func ExampleCode() {
	fmt.Println(captest.Code(core.Conflict("insufficient_funds", "not enough money")))
	fmt.Println(captest.Code(nil) == "")
	// Output:
	// insufficient_funds
	// true
}
