// Package captest runs capabilities in unit tests without HTTP, in the
// spirit of net/http/httptest: build an executor over the capabilities
// under test with a context function, run a capability by name as a
// caller with arguments, and look at the output or the error code.
package captest

import (
	"context"
	"encoding/json"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
)

// TB is the part of testing.TB the helpers use, so that they also work
// outside tests (for example in Example functions).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Static returns a context function that gives every call the same
// application context. Use it when a test is about the handler, not about
// the security boundary.
func Static[C any](app C) func(context.Context, *auth.Identity, *core.Definition, any) (C, error) {
	return func(context.Context, *auth.Identity, *core.Definition, any) (C, error) { return app, nil }
}

// NewExecutor builds an executor over defs with newContext as its context
// function and cfg as its configuration (hooks, timeouts; the zero Config
// is fine). It fails the test on a bad definition set.
func NewExecutor[C any](t TB, newContext func(context.Context, *auth.Identity, *core.Definition, any) (C, error), cfg core.Config, defs ...core.Definer) *core.Executor {
	t.Helper()
	reg, err := core.NewRegistry(defs...)
	if err != nil {
		t.Fatalf("captest: registry: %v", err)
		return nil
	}
	e, err := core.NewExecutor(reg, newContext, cfg)
	if err != nil {
		t.Fatalf("captest: executor: %v", err)
		return nil
	}
	return e
}

// Result is the outcome of Run.
type Result struct {
	// Output is the validated output JSON; nil on failure.
	Output json.RawMessage
	// Err is the executor's error; nil on success.
	Err *agentcap.Error
	// Code is the code a transport would send ("" on success):
	// "invalid_request", "capability_not_found", an application's own...
	Code agentcap.Code
	// Status is the HTTP status a transport would send (200 on success).
	Status int
}

// OK reports whether the call succeeded.
func (r Result) OK() bool { return r.Err == nil }

// Decode unmarshals the output into v, failing the test if the call failed.
func (r Result) Decode(t TB, v any) {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("captest: the call failed with %s: %v", r.Code, r.Err)
		return
	}
	if err := json.Unmarshal(r.Output, v); err != nil {
		t.Fatalf("captest: decoding output %s: %v", r.Output, err)
	}
}

// Run executes the named capability as a transport would, for the caller
// id (nil: anonymous; give the identity an Authorizer to test
// authorization). args may be nil (no arguments), a string, []byte or
// json.RawMessage holding JSON (used as is, so malformed input can be
// tested), or any other value, which is encoded with encoding/json.
func Run(t TB, e *core.Executor, name string, id *auth.Identity, args any) Result {
	t.Helper()
	raw, err := rawArgs(args)
	if err != nil {
		t.Fatalf("captest: encoding arguments: %v", err)
		return Result{}
	}
	out, err := e.Execute(context.Background(), name, id, raw)
	if err == nil {
		return Result{Output: out, Status: 200}
	}
	ce := agentcap.Public(err)
	return Result{Err: ce, Code: ce.Code, Status: ce.HTTPStatus()}
}

// Call runs a typed capability in process for the caller id and returns
// its output and the code of its error ("" on success).
func Call[C, In, Out any](e *core.Executor, c *core.Capability[C, In, Out], id *auth.Identity, in In) (Out, agentcap.Code) {
	out, err := core.Call(context.Background(), e, c, id, in)
	return out, agentcap.CodeOf(err)
}

func rawArgs(args any) ([]byte, error) {
	switch a := args.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(a), nil
	case []byte:
		return a, nil
	case json.RawMessage:
		return a, nil
	default:
		return json.Marshal(a)
	}
}
