// Package captest runs capabilities in unit tests without HTTP, in the
// spirit of net/http/httptest: build an executor over the capabilities
// under test with a context resolver, run a capability by name with a
// principal and arguments, and look at the output or the error code.
package captest

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentcap/agentcap/core"
)

// TB is the part of testing.TB the helpers use, so that they also work
// outside tests (for example in Example functions).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Resolver is a context resolver, as in core.ExecutorConfig.CreateContext.
type Resolver[C, P any] func(ctx context.Context, principal P, def *core.Definition, input any) (C, error)

// Static returns a resolver that gives every call the same application
// context. Use it when a test is about the handler, not about the security
// boundary.
func Static[C, P any](app C) Resolver[C, P] {
	return func(context.Context, P, *core.Definition, any) (C, error) { return app, nil }
}

// NewExecutor builds an executor over defs with resolve as its context
// resolver. Optional configure functions adjust the configuration (hooks,
// timeouts). It fails the test on a bad definition set.
func NewExecutor[C, P any](t TB, resolve Resolver[C, P], defs []core.Definer, configure ...func(*core.ExecutorConfig[C, P])) *core.Executor[C, P] {
	t.Helper()
	reg, err := core.NewRegistry(defs...)
	if err != nil {
		t.Fatalf("captest: registry: %v", err)
		return nil
	}
	cfg := core.ExecutorConfig[C, P]{CreateContext: resolve}
	for _, f := range configure {
		f(&cfg)
	}
	e, err := core.NewExecutor(reg, cfg)
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
	Err *core.Error
	// Code is the wire code a transport would send ("" on success):
	// "invalid_request", "capability_not_found", an application code...
	Code string
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

// Run executes the named capability as a transport would. args may be nil
// (no arguments), a string, []byte or json.RawMessage holding JSON (used
// as is, so malformed input can be tested), or any other value, which is
// encoded with encoding/json.
func Run[C, P any](t TB, e *core.Executor[C, P], name string, principal P, args any) Result {
	t.Helper()
	raw, err := rawArgs(args)
	if err != nil {
		t.Fatalf("captest: encoding arguments: %v", err)
		return Result{}
	}
	out, err := e.ExecuteDynamic(context.Background(), name, principal, raw, nil)
	return result(out, err)
}

// RunAuthorized is Run with an authorize callback, as transports pass one.
func RunAuthorized[C, P any](t TB, e *core.Executor[C, P], name string, principal P, args any, authorize core.AuthorizeFunc) Result {
	t.Helper()
	raw, err := rawArgs(args)
	if err != nil {
		t.Fatalf("captest: encoding arguments: %v", err)
		return Result{}
	}
	out, err := e.ExecuteDynamic(context.Background(), name, principal, raw, authorize)
	return result(out, err)
}

// Call runs a typed capability in process and returns its output and the
// wire code of its error ("" on success).
func Call[C, P, In, Out any](e *core.Executor[C, P], c *core.Capability[C, In, Out], principal P, in In) (Out, string) {
	out, err := core.Execute(context.Background(), e, c, principal, in)
	return out, Code(err)
}

// Code returns the wire code of an executor error: "" for nil, the
// application's code for an application error, the Agent Auth code of the
// table in core otherwise.
func Code(err error) string {
	if err == nil {
		return ""
	}
	var ce *core.Error
	if errors.As(err, &ce) {
		return ce.WireCode()
	}
	var ae *core.AppError
	if errors.As(err, &ae) {
		return ae.WireCode()
	}
	return core.WireInternalError
}

func result(out json.RawMessage, err error) Result {
	if err == nil {
		return Result{Output: out, Status: 200}
	}
	var ce *core.Error
	if !errors.As(err, &ce) {
		ce = core.NewError(core.CodeExecutionFailed, core.StageHandler, "internal error", nil)
	}
	return Result{Err: ce, Code: ce.WireCode(), Status: ce.HTTPStatus()}
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
