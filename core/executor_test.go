package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
)

// app is the application context of the test capabilities.
type app struct {
	User string
}

// Application codes of the test capabilities, each answered with the
// status of the kit code it is declared like.
var (
	codeNoUser            = agentcap.NewCode("no_user", agentcap.CodeUnauthorized)
	codeInsufficientFunds = agentcap.NewCode("insufficient_funds", agentcap.CodeConflict)
)

// caller is the verified identity of the test user id: an agent acting
// for that user, named by the user's id.
func caller(id string) *auth.Identity {
	return &auth.Identity{Subject: id, AgentID: "agt_" + id, HostID: "hst_1", UserID: id}
}

// authorizeFunc is an auth.Authorizer that decides each call with the
// function itself.
type authorizeFunc func(ctx context.Context, call *auth.Call) error

func (f authorizeFunc) Authorize(ctx context.Context, call *auth.Call) error { return f(ctx, call) }

// GrantStatus adds nothing to listings: the executor never asks.
func (authorizeFunc) GrantStatus(string) string { return "" }

// Recheck lets the caller go on acting: the executor never asks.
func (authorizeFunc) Recheck(context.Context) error { return nil }

// authorizedBy returns a copy of id whose Authorizer is f.
func authorizedBy(id *auth.Identity, f authorizeFunc) *auth.Identity {
	c := *id
	c.Authorizer = f
	return &c
}

type transferIn struct {
	Source      string  `json:"source_account" minLength:"1"`
	Destination string  `json:"destination_account" minLength:"1"`
	Amount      float64 `json:"amount" exclusiveMinimum:"0"`
	Currency    string  `json:"currency" enum:"USD,EUR,GBP"`
	Memo        string  `json:"memo,omitempty" maxLength:"20"`
}

type transferOut struct {
	ID     string  `json:"transfer_id"`
	Amount float64 `json:"amount"`
}

type echoIn struct {
	Text string `json:"text"`
}

type echoOut struct {
	Text string `json:"text"`
	User string `json:"user"`
}

func transfer(_ context.Context, a app, in transferIn) (transferOut, error) {
	return transferOut{ID: "tr_1", Amount: in.Amount}, nil
}

// createContext is the context function of most test executors: a call
// needs a user, whom the application context names.
func createContext(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (app, error) {
	if id == nil || id.UserID == "" {
		return app{}, agentcap.NewError(codeNoUser, "a user is required")
	}
	return app{User: id.UserID}, nil
}

// anyContext admits every caller, the anonymous one included.
func anyContext(context.Context, *auth.Identity, *core.Definition, any) (app, error) {
	return app{}, nil
}

// mustExec builds an executor of defs over createContext.
func mustExec(t testing.TB, cfg core.Config, defs ...core.Definer) *core.Executor {
	t.Helper()
	return mustExecWith(t, createContext, cfg, defs...)
}

// mustExecWith builds an executor of defs over newContext.
func mustExecWith(t testing.TB, newContext func(context.Context, *auth.Identity, *core.Definition, any) (app, error), cfg core.Config, defs ...core.Definer) *core.Executor {
	t.Helper()
	reg, err := core.NewRegistry(defs...)
	if err != nil {
		t.Fatal(err)
	}
	e, err := core.NewExecutor(reg, newContext, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// coreErr returns err as the *agentcap.Error every error of the executor
// is, failing the test when it is not one.
func coreErr(t testing.TB, err error) *agentcap.Error {
	t.Helper()
	ce, ok := err.(*agentcap.Error)
	if !ok || ce == nil {
		t.Fatalf("error %v (%T) is not an *agentcap.Error", err, err)
	}
	return ce
}

var transferCap = core.MustDefine("transfer_money", "Move money between accounts.", transfer,
	core.WithRequiredConstraints("destination_account"), core.WithApproval(core.ApprovalWebAuthn), core.WithRisk(core.RiskHigh))

func TestExecuteSuccess(t *testing.T) {
	e := mustExec(t, core.Config{}, transferCap)
	out, err := e.Execute(context.Background(), "transfer_money", caller("alice"),
		[]byte(`{"source_account":"a","destination_account":"b","amount":12.5,"currency":"EUR"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), `{"transfer_id":"tr_1","amount":12.5}`; got != want {
		t.Fatalf("output = %s, want %s", got, want)
	}
}

func TestStrictInput(t *testing.T) {
	e := mustExec(t, core.Config{}, transferCap)
	tests := []struct {
		name string
		args string
		want []agentcap.Violation
	}{
		{"case variant key", `{"source_account":"a","destination_account":"b","Amount":1,"amount":1,"currency":"USD"}`,
			[]agentcap.Violation{{Path: "/Amount"}}},
		{"case variant only", `{"source_account":"a","destination_account":"b","AMOUNT":1,"currency":"USD"}`,
			[]agentcap.Violation{{Path: "/AMOUNT"}, {Path: "/amount"}}},
		{"duplicate key", `{"source_account":"a","destination_account":"b","amount":1,"amount":2,"currency":"USD"}`,
			[]agentcap.Violation{{Path: "/amount"}}},
		{"unknown key", `{"source_account":"a","destination_account":"b","amount":1,"currency":"USD","admin":true}`,
			[]agentcap.Violation{{Path: "/admin"}}},
		{"every violation reported", `{"source_account":"","amount":-1,"currency":"JPY","memo":"this memo is much too long"}`,
			[]agentcap.Violation{{Path: "/amount"}, {Path: "/currency"}, {Path: "/destination_account"}, {Path: "/memo"}, {Path: "/source_account"}}},
		{"not an object", `[1,2]`, []agentcap.Violation{{Path: ""}}},
		{"malformed", `{"amount":`, []agentcap.Violation{{Path: ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Execute(context.Background(), "transfer_money", caller("alice"), []byte(tt.args))
			ce := coreErr(t, err)
			if ce.Code != agentcap.CodeInvalidRequest || ce.Stage != agentcap.StageInput {
				t.Fatalf("got %s at %s, want invalid_request at input", ce.Code, ce.Stage)
			}
			if ce.HTTPStatus() != http.StatusBadRequest || string(ce.Code) != "invalid_request" {
				t.Errorf("status/code = %d/%s", ce.HTTPStatus(), ce.Code)
			}
			var paths []agentcap.Violation
			for _, v := range ce.Details {
				if v.Message == "" {
					t.Errorf("violation at %q has no message", v.Path)
				}
				paths = append(paths, agentcap.Violation{Path: v.Path})
			}
			if diff := cmp.Diff(tt.want, paths); diff != "" {
				t.Errorf("violation paths (-want +got):\n%s\n%+v", diff, ce.Details)
			}
		})
	}
}

func TestAbsentArgumentsMeanEmptyObject(t *testing.T) {
	ping := core.MustDefine("ping", "Answer pong.", func(_ context.Context, _ app, _ core.NoInput) (echoOut, error) {
		return echoOut{Text: "pong"}, nil
	})
	e := mustExec(t, core.Config{}, ping)
	for _, args := range []string{"", "null", " {} "} {
		if _, err := e.Execute(context.Background(), "ping", caller("a"), []byte(args)); err != nil {
			t.Errorf("args %q: %v", args, err)
		}
	}
	if _, err := e.Execute(context.Background(), "ping", caller("a"), []byte(`{"x":1}`)); coreErr(t, err).Code != agentcap.CodeInvalidRequest {
		t.Errorf("extra field accepted")
	}
}

// pointerIn lets the test see whether the very same decoded value reaches
// every stage: a re-parse would produce a different pointer.
type pointerIn struct {
	Items []string `json:"items"`
}

func TestAuthorizeContextAndHandlerSeeTheSameValue(t *testing.T) {
	var seen []*string
	def := core.MustDefine("same", "Check identity of input.", func(_ context.Context, _ app, in pointerIn) (echoOut, error) {
		seen = append(seen, &in.Items[0])
		return echoOut{}, nil
	})
	e := mustExecWith(t, func(_ context.Context, _ *auth.Identity, _ *core.Definition, input any) (app, error) {
		seen = append(seen, &input.(pointerIn).Items[0])
		return app{}, nil
	}, core.Config{}, def)
	id := authorizedBy(caller("a"), func(_ context.Context, call *auth.Call) error {
		seen = append(seen, &call.Input.(pointerIn).Items[0])
		if got := string(call.Arguments["items"]); got != `["x"]` {
			t.Errorf("raw argument snapshot = %s", got)
		}
		return nil
	})
	if _, err := e.Execute(context.Background(), "same", id, []byte(`{"items":["x"]}`)); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 || seen[0] != seen[1] || seen[1] != seen[2] {
		t.Fatalf("stages saw different values: %v", seen)
	}
}

// TestAuthorizerRefuses: the identity's Authorizer decides the call at
// the authorize stage; a refusal stops it before the context is built.
func TestAuthorizerRefuses(t *testing.T) {
	var contexts, runs atomic.Int32
	def := core.MustDefine("transfer_money", "Move money between accounts.",
		func(ctx context.Context, a app, in transferIn) (transferOut, error) {
			runs.Add(1)
			return transfer(ctx, a, in)
		}, core.WithRequiredConstraints("destination_account"))
	e := mustExecWith(t, func(ctx context.Context, id *auth.Identity, d *core.Definition, in any) (app, error) {
		contexts.Add(1)
		return createContext(ctx, id, d, in)
	}, core.Config{}, def)
	args := []byte(`{"source_account":"a","destination_account":"b","amount":1,"currency":"USD"}`)
	run := func(refusal error) *agentcap.Error {
		t.Helper()
		_, err := e.Execute(context.Background(), "transfer_money",
			authorizedBy(caller("a"), func(context.Context, *auth.Call) error { return refusal }), args)
		return coreErr(t, err)
	}

	// Any other error refuses with a generic unauthorized.
	ce := run(errors.New("secret policy detail"))
	if ce.Code != agentcap.CodeUnauthorized || ce.Stage != agentcap.StageAuthorize || ce.HTTPStatus() != http.StatusForbidden ||
		strings.Contains(ce.Message, "secret") || ce.Message == "" {
		t.Fatalf("plain error: %+v", ce)
	}
	// An *agentcap.Error refuses in its own words, with its members.
	ce = run(agentcap.NewError(agentcap.CodeConstraintViolated, "outside the grant").With("violations", []string{"amount"}))
	if ce.Code != agentcap.CodeConstraintViolated || ce.Stage != agentcap.StageAuthorize || ce.HTTPStatus() != http.StatusForbidden ||
		ce.Message != "outside the grant" || !cmp.Equal(ce.Fields["violations"], []string{"amount"}) {
		t.Fatalf("constraint violated: %+v", ce)
	}
	// ErrForbidden refuses with unauthorized, and stays the cause.
	err := error(run(fmt.Errorf("grant revoked: %w", core.ErrForbidden)))
	if ce := coreErr(t, err); ce.Code != agentcap.CodeUnauthorized || ce.Stage != agentcap.StageAuthorize || !errors.Is(err, core.ErrForbidden) {
		t.Fatalf("ErrForbidden: %+v", ce)
	}
	if contexts.Load() != 0 || runs.Load() != 0 {
		t.Fatalf("a refused call built %d contexts and ran %d times", contexts.Load(), runs.Load())
	}

	// Allowed, the call goes on; an identity without an Authorizer may
	// run whatever it can see.
	allow := authorizedBy(caller("a"), func(context.Context, *auth.Call) error { return nil })
	for _, id := range []*auth.Identity{allow, caller("a")} {
		if _, err := e.Execute(context.Background(), "transfer_money", id, args); err != nil {
			t.Fatalf("allowed: %v", err)
		}
	}
	if runs.Load() != 2 {
		t.Fatalf("runs = %d, want 2", runs.Load())
	}
}

// normIn holds a field whose decoding changes its value (currency folds
// case) and one that encodes to nothing when empty.
type normIn struct {
	To       string   `json:"to"`
	Amount   float64  `json:"amount"`
	Currency currency `json:"currency"`
	Memo     string   `json:"memo,omitempty"`
}

// TestAuthorizerSeesTheCall: the Authorizer gets the capability, its
// required constraints, the raw arguments, the decoded input and a
// Normalized that shows what decoding changed.
func TestAuthorizerSeesTheCall(t *testing.T) {
	pay := core.MustDefine("pay_abroad", "Pay in a currency.", func(_ context.Context, _ app, in normIn) (payOut, error) {
		return payOut{Paid: int(in.Amount)}, nil
	}, core.WithRequiredConstraints("to", "currency"))
	e := mustExec(t, core.Config{}, pay)
	type normalized struct {
		Value string
		OK    bool
	}
	var calls []auth.Call
	var norms []map[string]normalized
	id := authorizedBy(caller("ann"), func(_ context.Context, call *auth.Call) error {
		calls = append(calls, *call)
		got := map[string]normalized{}
		for _, f := range []string{"to", "amount", "currency", "memo", "nope"} {
			v, ok := call.Normalized(f)
			got[f] = normalized{string(v), ok}
		}
		norms = append(norms, got)
		return nil
	})

	args := `{"to":"bob", "amount":5.0,"currency":"eur"}`
	if _, err := e.Execute(context.Background(), "pay_abroad", id, []byte(args)); err != nil {
		t.Fatal(err)
	}
	in := normIn{To: "bob", Amount: 5, Currency: "EUR"}
	if _, err := core.Call(context.Background(), e, pay, id, in); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 {
		t.Fatalf("the Authorizer decided %d calls, want 2", len(calls))
	}
	for i, c := range calls {
		if c.Capability != "pay_abroad" || !cmp.Equal(c.RequiredConstraints, []string{"currency", "to"}) || c.Input != any(in) {
			t.Errorf("call %d: capability %q, required %v, input %#v", i, c.Capability, c.RequiredConstraints, c.Input)
		}
		want := map[string]normalized{
			"to": {`"bob"`, true}, "amount": {`5`, true}, "currency": {`"EUR"`, true},
			"memo": {"", false}, "nope": {"", false},
		}
		if diff := cmp.Diff(want, norms[i]); diff != "" {
			t.Errorf("call %d: Normalized (-want +got):\n%s", i, diff)
		}
	}
	// The raw arguments are as the caller sent them; a typed call has none.
	raw := map[string]string{}
	for k, v := range calls[0].Arguments {
		raw[k] = string(v)
	}
	if diff := cmp.Diff(map[string]string{"to": `"bob"`, "amount": `5.0`, "currency": `"eur"`}, raw); diff != "" {
		t.Errorf("arguments (-want +got):\n%s", diff)
	}
	if calls[1].Arguments != nil {
		t.Errorf("a typed call has arguments %v", calls[1].Arguments)
	}
}

func TestErrorRedactionAndPassThrough(t *testing.T) {
	const secret = "postgres://admin:hunter2@db.internal/ledger"
	secretErr := errors.New(secret)
	failing := func(err error, panics bool) func(context.Context, app, echoIn) (echoOut, error) {
		return func(context.Context, app, echoIn) (echoOut, error) {
			if panics {
				panic(secret)
			}
			return echoOut{}, err
		}
	}
	appErr := agentcap.NewError(codeInsufficientFunds, "the account has insufficient funds").WithCause(secretErr)
	tests := []struct {
		name       string
		handler    func(context.Context, app, echoIn) (echoOut, error)
		wantCode   agentcap.Code
		wantStatus int
		wantMsg    string
	}{
		{"plain error", failing(fmt.Errorf("query failed: %w", secretErr), false), agentcap.CodeInternalError, 500, "internal error"},
		{"panic", failing(nil, true), agentcap.CodeInternalError, 500, "internal error"},
		{"application error", failing(fmt.Errorf("wrapped: %w", appErr), false), codeInsufficientFunds, 409, "the account has insufficient funds"},
		{"kit code", failing(agentcap.NewError(agentcap.CodeConflict, "the account is frozen"), false), agentcap.CodeConflict, 409, "the account is frozen"},
		{"deadline", failing(context.DeadlineExceeded, false), agentcap.CodeTimeout, 504, ""},
		{"canceled", failing(context.Canceled, false), agentcap.CodeCancelled, 499, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustExec(t, core.Config{}, core.MustDefine("fail", "Fails.", tt.handler))
			_, err := e.Execute(context.Background(), "fail", caller("a"), []byte(`{"text":"x"}`))
			ce := coreErr(t, err)
			if ce.Code != tt.wantCode || ce.Stage != agentcap.StageHandler || ce.HTTPStatus() != tt.wantStatus {
				t.Fatalf("got code=%s stage=%s status=%d", ce.Code, ce.Stage, ce.HTTPStatus())
			}
			if tt.wantMsg != "" && ce.Message != tt.wantMsg {
				t.Errorf("message = %q, want %q", ce.Message, tt.wantMsg)
			}
			if strings.Contains(ce.Message, "hunter2") || strings.Contains(fmt.Sprint(ce.Details, ce.Fields), "hunter2") {
				t.Errorf("public parts leak the cause: %q", ce.Message)
			}
			// The cause is kept for logs.
			if tt.name == "plain error" || tt.name == "application error" {
				if !errors.Is(err, secretErr) {
					t.Errorf("%v does not keep its cause", err)
				}
			}
			if tt.name == "panic" && !strings.Contains(err.Error(), secret) {
				t.Errorf("the panic's value is lost for logs: %v", err)
			}
		})
	}
}

func TestContextStageErrors(t *testing.T) {
	def := core.MustDefine("echo", "Echo.", func(_ context.Context, a app, in echoIn) (echoOut, error) {
		return echoOut{Text: in.Text, User: a.User}, nil
	})
	e := mustExec(t, core.Config{}, def)
	_, err := e.Execute(context.Background(), "echo", nil, []byte(`{"text":"x"}`))
	ce := coreErr(t, err)
	if ce.Stage != agentcap.StageContext || ce.Code != codeNoUser || ce.HTTPStatus() != 403 || ce.Message != "a user is required" {
		t.Fatalf("got %+v", ce)
	}
	e = mustExecWith(t, func(context.Context, *auth.Identity, *core.Definition, any) (app, error) {
		return app{}, fmt.Errorf("membership lookup: %w", core.ErrForbidden)
	}, core.Config{}, def)
	_, err = e.Execute(context.Background(), "echo", caller("a"), []byte(`{"text":"x"}`))
	if ce := coreErr(t, err); ce.Code != agentcap.CodeUnauthorized || ce.Stage != agentcap.StageContext || ce.HTTPStatus() != 403 {
		t.Fatalf("got %+v", ce)
	}
	// The context function gets the caller's identity as it is.
	ann := caller("ann")
	var got *auth.Identity
	e = mustExecWith(t, func(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (app, error) {
		got = id
		return app{}, nil
	}, core.Config{}, def)
	if _, err := e.Execute(context.Background(), "echo", ann, []byte(`{"text":"x"}`)); err != nil || got != ann {
		t.Fatalf("context function got %p, want %p (%v)", got, ann, err)
	}
}

func TestUnknownCapability(t *testing.T) {
	e := mustExec(t, core.Config{}, transferCap)
	_, err := e.Execute(context.Background(), "nope", nil, nil)
	ce := coreErr(t, err)
	if ce.Code != agentcap.CodeCapabilityNotFound || ce.Stage != agentcap.StageLookup || ce.HTTPStatus() != 404 ||
		string(ce.Code) != "capability_not_found" {
		t.Fatalf("got %+v", ce)
	}
}

type badOut struct {
	Status string `json:"status" enum:"completed"`
}

func TestInvalidOutputIsHidden(t *testing.T) {
	def := core.MustDefine("bad", "Returns a bad status.", func(context.Context, app, core.NoInput) (badOut, error) {
		return badOut{Status: "secret-state"}, nil
	})
	e := mustExec(t, core.Config{}, def)
	_, err := e.Execute(context.Background(), "bad", caller("a"), nil)
	ce := coreErr(t, err)
	if ce.Code != agentcap.CodeInternalError || ce.Stage != agentcap.StageOutput || ce.HTTPStatus() != 500 {
		t.Fatalf("got %+v", ce)
	}
	if len(ce.Details) != 0 || len(ce.Fields) != 0 || strings.Contains(ce.Message, "status") {
		t.Errorf("output details leaked: %+v", ce)
	}
	if !strings.Contains(err.Error(), "/status") {
		t.Errorf("the hidden cause should name the failing path for logs: %v", err)
	}
}

func TestTimeout(t *testing.T) {
	slow := core.MustDefine("slow", "Waits for its context.", func(ctx context.Context, _ app, _ core.NoInput) (echoOut, error) {
		<-ctx.Done()
		return echoOut{}, ctx.Err()
	}, core.WithTimeout(10*time.Millisecond))
	e := mustExec(t, core.Config{}, slow)
	_, err := e.Execute(context.Background(), "slow", caller("a"), nil)
	if ce := coreErr(t, err); ce.Code != agentcap.CodeTimeout || ce.HTTPStatus() != 504 {
		t.Fatalf("got %+v", ce)
	}
	// A caller that gave up yields cancelled, before any context is built.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = e.Execute(ctx, "slow", caller("a"), nil)
	if ce := coreErr(t, err); ce.Code != agentcap.CodeCancelled || ce.Stage != agentcap.StageContext || ce.HTTPStatus() != 499 {
		t.Fatalf("got %+v", ce)
	}
}

func TestTypedCall(t *testing.T) {
	e := mustExec(t, core.Config{}, transferCap)
	out, err := core.Call(context.Background(), e, transferCap, caller("a"),
		transferIn{Source: "a", Destination: "b", Amount: 3, Currency: "GBP"})
	if err != nil || out.Amount != 3 {
		t.Fatalf("got %+v, %v", out, err)
	}
	_, err = core.Call(context.Background(), e, transferCap, caller("a"), transferIn{Source: "a", Destination: "b", Amount: 3, Currency: "JPY"})
	if ce := coreErr(t, err); ce.Code != agentcap.CodeInvalidRequest || len(ce.Details) != 1 || ce.Details[0].Path != "/currency" {
		t.Fatalf("got %+v", ce)
	}
	other := core.MustDefine("transfer_money", "Same name, other definition.", transfer)
	if _, err := core.Call(context.Background(), e, other, caller("a"), transferIn{}); coreErr(t, err).Code != agentcap.CodeCapabilityNotFound {
		t.Fatalf("an unregistered capability ran")
	}
	if _, err := core.Call[app, transferIn, transferOut](context.Background(), e, nil, caller("a"), transferIn{}); coreErr(t, err).Code != agentcap.CodeCapabilityNotFound {
		t.Fatalf("a nil capability: %v", err)
	}
	// The program's own call has no identity: the context function decides.
	if _, err := core.Call(context.Background(), e, transferCap, nil, transferIn{Source: "a", Destination: "b", Amount: 3, Currency: "GBP"}); coreErr(t, err).Code != codeNoUser {
		t.Fatalf("a call without an identity: %v", err)
	}
}

func TestHooks(t *testing.T) {
	var mu sync.Mutex
	var events []core.Event
	record := func(_ context.Context, ev core.Event) error {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
		return nil
	}
	broken := []core.Hook{
		func(context.Context, core.Event) error { return errors.New("hook failed") },
		func(context.Context, core.Event) error { panic("hook panicked") },
	}
	e := mustExec(t, core.Config{Hooks: append(broken, record)}, transferCap)
	alice := caller("alice")

	good := []byte(`{"source_account":"a","destination_account":"b","amount":2,"currency":"USD"}`)
	out, err := e.Execute(context.Background(), "transfer_money", alice, good)
	if err != nil || string(out) != `{"transfer_id":"tr_1","amount":2}` {
		t.Fatalf("failing hooks changed the result: %s, %v", out, err)
	}
	if len(events) != 2 || events[0].Phase != core.PhaseStart || events[1].Phase != core.PhaseEnd {
		t.Fatalf("events = %+v", events)
	}
	if start := events[0]; start.Stage != agentcap.StageLookup || start.Identity != alice || start.Definition != transferCap.Definition() {
		t.Errorf("start event = %+v", start)
	}
	end := events[1]
	if end.Stage != agentcap.StageOutput || end.Definition != transferCap.Definition() || end.Identity != alice ||
		end.App != (app{User: "alice"}) || end.Input.(transferIn).Amount != 2 || end.Output.(transferOut).ID != "tr_1" ||
		string(end.OutputJSON) != string(out) || end.Duration <= 0 || end.Err != nil {
		t.Errorf("end event = %+v", end)
	}

	events = nil
	raw := []byte(`{"source_account":"s3cr3t-raw","destination_account":"b","amount":-5,"currency":"USD"}`)
	if _, err := e.Execute(context.Background(), "transfer_money", alice, raw); err == nil {
		t.Fatal("invalid input accepted")
	}
	if len(events) != 2 || events[1].Phase != core.PhaseError || events[1].Stage != agentcap.StageInput ||
		events[1].Err == nil || events[1].Err.Code != agentcap.CodeInvalidRequest {
		t.Fatalf("events = %+v", events)
	}
	if ev := events[1]; ev.Input != nil || ev.App != nil || ev.Output != nil || ev.OutputJSON != nil ||
		strings.Contains(fmt.Sprintf("%+v", ev), "s3cr3t-raw") {
		t.Errorf("an input-stage failure event carries input: %+v", ev)
	}

	events = nil
	refused := authorizedBy(alice, func(context.Context, *auth.Call) error { return core.ErrForbidden })
	_, _ = e.Execute(context.Background(), "transfer_money", refused, good)
	if ev := events[1]; ev.Stage != agentcap.StageAuthorize || ev.Input == nil || ev.App != nil || ev.Identity != refused ||
		ev.Err.Code != agentcap.CodeUnauthorized {
		t.Errorf("authorize failure event = %+v", ev)
	}

	events = nil
	_, _ = e.Execute(context.Background(), "missing", alice, nil)
	if len(events) != 1 || events[0].Phase != core.PhaseError || events[0].Stage != agentcap.StageLookup || events[0].Definition != nil ||
		events[0].Capability != "missing" || events[0].Identity != alice || events[0].Err.Code != agentcap.CodeCapabilityNotFound {
		t.Errorf("lookup failure events = %+v", events)
	}
}

func TestBatchOrderAndCodes(t *testing.T) {
	var running, peak atomic.Int32
	echo := core.MustDefine("echo", "Echo the text.", func(_ context.Context, a app, in echoIn) (echoOut, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		if in.Text == "broke" {
			return echoOut{}, agentcap.NewError(codeInsufficientFunds, "try later")
		}
		return echoOut{Text: in.Text, User: a.User}, nil
	})
	e := mustExec(t, core.Config{BatchConcurrency: 3, MaxBatch: 40}, echo)
	if e.MaxBatch() != 40 {
		t.Fatalf("MaxBatch = %d", e.MaxBatch())
	}
	var calls []core.BatchCall
	var want []string
	for i := range 30 {
		c := core.BatchCall{ID: fmt.Sprint(i), Capability: "echo", Arguments: json.RawMessage(fmt.Sprintf(`{"text":"t%d"}`, i))}
		w := fmt.Sprintf(`ok {"text":"t%d","user":"u"}`, i)
		switch i % 5 {
		case 1:
			c.Capability = "nope"
			w = "capability_not_found"
		case 2:
			c.Arguments = json.RawMessage(`{"text":1}`)
			w = "invalid_request"
		case 3:
			c.Arguments = json.RawMessage(`{"text":"broke"}`)
			w = "insufficient_funds"
		}
		calls = append(calls, c)
		want = append(want, c.ID+" "+w)
	}
	results, err := e.ExecuteBatch(context.Background(), caller("u"), calls)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range results {
		if r.Err != nil {
			got = append(got, r.ID+" "+string(r.Err.Code))
		} else {
			got = append(got, r.ID+" ok "+string(r.Data))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("batch results (-want +got):\n%s", diff)
	}
	if p := peak.Load(); p > 3 {
		t.Errorf("peak concurrency %d exceeds the bound 3", p)
	}
	_, err = e.ExecuteBatch(context.Background(), caller("u"), make([]core.BatchCall, 41))
	if ce := coreErr(t, err); ce.Code != agentcap.CodeInvalidRequest || !strings.Contains(ce.Message, "1 to 40") {
		t.Errorf("oversized batch: %v", err)
	}
	if _, err := e.ExecuteBatch(context.Background(), caller("u"), nil); coreErr(t, err).Code != agentcap.CodeInvalidRequest {
		t.Errorf("empty batch: %v", err)
	}
}

// TestBatchItemsAreAuthorizedEach: the identity's Authorizer decides every
// item of a batch on its own.
func TestBatchItemsAreAuthorizedEach(t *testing.T) {
	e := mustExec(t, core.Config{}, echoCap)
	var mu sync.Mutex
	var decided []string
	id := authorizedBy(caller("u"), func(_ context.Context, call *auth.Call) error {
		var text string
		if err := json.Unmarshal(call.Arguments["text"], &text); err != nil {
			return err
		}
		mu.Lock()
		decided = append(decided, text)
		mu.Unlock()
		if text == "no" {
			return agentcap.NewError(agentcap.CodeCapabilityNotGranted, "not granted")
		}
		return nil
	})
	res, err := e.ExecuteBatch(context.Background(), id, []core.BatchCall{
		{ID: "a", Capability: "echo", Arguments: json.RawMessage(`{"text":"yes"}`)},
		{ID: "b", Capability: "echo", Arguments: json.RawMessage(`{"text":"no"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil || res[1].Err == nil || res[1].Err.Code != agentcap.CodeCapabilityNotGranted || res[1].Err.Stage != agentcap.StageAuthorize {
		t.Errorf("results %+v", res)
	}
	if len(decided) != 2 {
		t.Errorf("the Authorizer decided %v", decided)
	}
}

func TestExecutorChecksItsConfiguration(t *testing.T) {
	other := core.MustDefine("other", "Wants another context.", func(context.Context, string, core.NoInput) (echoOut, error) {
		return echoOut{}, nil
	})
	reg := core.MustRegistry(other)
	_, err := core.NewExecutor(reg, createContext, core.Config{})
	var de *core.DefinitionError
	if !errors.As(err, &de) || de.Capability != "other" || !strings.Contains(err.Error(), "core_test.app") {
		t.Fatalf("another application context: %v", err)
	}
	if _, err := core.NewExecutor[string](reg, nil, core.Config{}); err == nil {
		t.Fatal("a nil context function was accepted")
	}
	if _, err := core.NewExecutor(nil, createContext, core.Config{}); err == nil {
		t.Fatal("a nil registry was accepted")
	}
	if _, err := core.NewExecutor(core.MustRegistry(transferCap), createContext, core.Config{MaxBatch: -1}); err == nil {
		t.Fatal("a negative MaxBatch was accepted")
	}
	e := core.MustExecutor(core.MustRegistry(transferCap), createContext, core.Config{})
	if e.MaxBatch() != 50 || e.Audits() {
		t.Errorf("defaults: MaxBatch %d, Audits %v", e.MaxBatch(), e.Audits())
	}
	defer func() {
		if recover() == nil {
			t.Error("MustExecutor did not panic on another application context")
		}
	}()
	core.MustExecutor(reg, createContext, core.Config{})
}

// visibilityCall is one call of a visibility predicate.
type visibilityCall struct {
	Subject   string
	Executing bool
}

// visibilityLog records the calls of a visibility predicate that shows
// the capability to the subject "root" only.
type visibilityLog struct {
	mu    sync.Mutex
	calls []visibilityCall
}

func (l *visibilityLog) rootOnly(_ context.Context, id *auth.Identity, executing bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := visibilityCall{Executing: executing}
	if id != nil {
		c.Subject = id.Subject
	}
	l.calls = append(l.calls, c)
	return id != nil && id.Subject == "root"
}

func (l *visibilityLog) take() []visibilityCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.calls
	l.calls = nil
	return c
}

func names(defs []*core.Definition) []string {
	var out []string
	for _, d := range defs {
		out = append(out, d.Name())
	}
	return out
}

func TestVisibilityInListings(t *testing.T) {
	var vis visibilityLog
	admin := core.MustDefine("admin.reset", "Reset everything.", func(context.Context, app, core.NoInput) (echoOut, error) {
		return echoOut{}, nil
	}, core.WithVisibility(vis.rootOnly))
	reg := core.MustRegistry(admin, transferCap)
	ctx := context.Background()
	if got := names(reg.Visible(ctx, caller("root"))); !cmp.Equal(got, []string{"admin.reset", "transfer_money"}) {
		t.Errorf("root sees %v", got)
	}
	if got := names(reg.Visible(ctx, caller("bob"))); !cmp.Equal(got, []string{"transfer_money"}) {
		t.Errorf("bob sees %v", got)
	}
	if got := names(reg.Visible(ctx, nil)); !cmp.Equal(got, []string{"transfer_money"}) {
		t.Errorf("the anonymous caller sees %v", got)
	}
	if _, ok := reg.Describe(ctx, caller("bob"), "admin.reset"); ok {
		t.Errorf("bob can describe admin.reset")
	}
	if d, ok := reg.Describe(ctx, caller("root"), "admin.reset"); !ok || d != admin.Definition() {
		t.Errorf("root cannot describe admin.reset")
	}
	if _, ok := reg.Describe(ctx, caller("root"), "nope"); ok {
		t.Errorf("an unknown capability was described")
	}
	for _, c := range vis.take() {
		if c.Executing {
			t.Errorf("a listing asked the predicate with executing true: %+v", c)
		}
	}
	// Definition.Visible asks the predicate as it is told.
	if !transferCap.Definition().Visible(ctx, nil, true) || admin.Definition().Visible(ctx, nil, false) ||
		!admin.Definition().Visible(ctx, caller("root"), true) {
		t.Errorf("Definition.Visible")
	}
	want := []visibilityCall{{Subject: "", Executing: false}, {Subject: "root", Executing: true}}
	if diff := cmp.Diff(want, vis.take()); diff != "" {
		t.Errorf("Definition.Visible asked (-want +got):\n%s", diff)
	}
}

// TestHiddenCapabilityIsUnknownToTheExecutor: the executor answers a
// capability its caller may not see exactly as an unknown one, at the
// lookup stage, before reading the arguments; the predicate is asked with
// executing true.
func TestHiddenCapabilityIsUnknownToTheExecutor(t *testing.T) {
	var vis visibilityLog
	var contexts, runs atomic.Int32
	admin := core.MustDefine("admin.reset", "Reset everything.", func(context.Context, app, echoIn) (echoOut, error) {
		runs.Add(1)
		return echoOut{Text: "reset"}, nil
	}, core.WithVisibility(vis.rootOnly))
	adminStream := core.MustDefineStream("admin.watch", "Watch everything.",
		func(context.Context, app, core.NoInput, *core.Emitter[tick]) (tickOut, error) {
			runs.Add(1)
			return tickOut{}, nil
		}, core.WithVisibility(vis.rootOnly))
	var mu sync.Mutex
	var events []core.Event
	hook := func(_ context.Context, ev core.Event) error {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
		return nil
	}
	log := &auditLog{}
	e := mustExecWith(t, func(ctx context.Context, id *auth.Identity, d *core.Definition, in any) (app, error) {
		contexts.Add(1)
		return createContext(ctx, id, d, in)
	}, core.Config{Hooks: []core.Hook{hook}, Audit: core.AuditConfig{Writer: log}}, admin, adminStream, transferCap)
	ctx := context.Background()
	refusing := authorizeFunc(func(context.Context, *auth.Call) error {
		t.Error("the Authorizer was asked about a hidden capability")
		return nil
	})
	bob := authorizedBy(caller("bob"), refusing)

	_, unknown := e.Execute(ctx, "admin.nope", bob, []byte(`{"text":"x"}`))
	want := coreErr(t, unknown)
	vis.take()
	mu.Lock()
	unknownEvent := events[0]
	events = nil
	mu.Unlock()
	if want.Code != agentcap.CodeCapabilityNotFound || want.Stage != agentcap.StageLookup {
		t.Fatalf("unknown capability: %+v", want)
	}
	sameAs := func(what string, err error, id *auth.Identity, executing bool) {
		t.Helper()
		ce := coreErr(t, err)
		if ce.Code != want.Code || ce.Stage != want.Stage || ce.Message != want.Message || ce.HTTPStatus() != want.HTTPStatus() ||
			ce.Details != nil || ce.Fields != nil || ce.RetryAfter != 0 || err.Error() != unknown.Error() {
			t.Errorf("%s: %+v, want the answer to an unknown capability %+v", what, ce, want)
		}
		subject := ""
		if id != nil {
			subject = id.Subject
		}
		if got := vis.take(); len(got) == 0 || got[len(got)-1] != (visibilityCall{Subject: subject, Executing: executing}) {
			t.Errorf("%s: the predicate was asked %+v, want executing %v for %q", what, got, executing, subject)
		}
	}
	same := func(what string, err error, id *auth.Identity) {
		t.Helper()
		sameAs(what, err, id, true)
	}

	_, err := e.Execute(ctx, "admin.reset", bob, []byte(`{"text":"x"}`))
	same("bob executes", err, bob)
	// The arguments are not read: invalid ones get the same answer.
	_, err = e.Execute(ctx, "admin.reset", bob, []byte(`{"text":1,"extra":true}`))
	same("bob executes with invalid arguments", err, bob)
	_, err = e.Execute(ctx, "admin.reset", nil, []byte(`{"text":"x"}`))
	same("the anonymous caller executes", err, nil)
	// A hidden capability has no preview to refuse either; a preview runs
	// nothing, so the predicate is asked as for a listing.
	_, err = e.Preview(ctx, "admin.reset", bob, []byte(`{"text":"x"}`))
	sameAs("bob previews", err, bob, false)
	_, err = core.Call(ctx, e, admin, bob, echoIn{Text: "x"})
	same("bob calls in process", err, bob)
	res, err := e.ExecuteBatch(ctx, bob, []core.BatchCall{
		{ID: "a", Capability: "admin.reset", Arguments: json.RawMessage(`{"text":"x"}`)},
		// A hidden stream is not refused as a stream: it does not exist.
		{ID: "b", Capability: "admin.watch"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err == nil {
			t.Fatalf("batch item %s ran", r.ID)
		}
		if r.Err.Code != want.Code || r.Err.Stage != want.Stage || r.Err.Message != want.Message {
			t.Errorf("batch item %s: %+v", r.ID, r.Err)
		}
	}
	if got := vis.take(); len(got) == 0 {
		t.Errorf("the batch did not ask the predicate")
	} else {
		for _, c := range got {
			if c != (visibilityCall{Subject: "bob", Executing: true}) {
				t.Errorf("the batch asked the predicate %+v", c)
			}
		}
	}
	if contexts.Load() != 0 || runs.Load() != 0 {
		t.Fatalf("hidden calls built %d contexts and ran %d times", contexts.Load(), runs.Load())
	}
	// Hooks see a failed lookup, without the definition, as for an
	// unknown name; the audit trail records neither.
	mu.Lock()
	for _, ev := range events {
		if ev.Phase != unknownEvent.Phase || ev.Stage != unknownEvent.Stage || ev.Definition != nil || ev.Err.Code != want.Code {
			t.Errorf("hook event of a hidden call: %+v, want one like %+v", ev, unknownEvent)
		}
	}
	mu.Unlock()
	if recs := log.take(); len(recs) != 0 {
		t.Errorf("hidden calls were audited: %s", auditEvents(recs))
	}

	// root sees it and runs it.
	out, err := e.Execute(ctx, "admin.reset", caller("root"), []byte(`{"text":"x"}`))
	if err != nil || string(out) != `{"text":"reset","user":""}` || runs.Load() != 1 {
		t.Fatalf("root: %s %v", out, err)
	}
	if got := vis.take(); !cmp.Equal(got, []visibilityCall{{Subject: "root", Executing: true}}) {
		t.Errorf("root's call asked the predicate %+v", got)
	}
}

// TestVisibilityWhileExecuting: a predicate may hide a capability from a
// caller's listings and still admit its calls, so that the context
// function refuses them in its own words.
func TestVisibilityWhileExecuting(t *testing.T) {
	var asked []visibilityCall
	admin := core.MustDefine("admin.reset", "Reset everything.", func(context.Context, app, core.NoInput) (echoOut, error) {
		return echoOut{}, nil
	}, core.WithVisibility(func(_ context.Context, id *auth.Identity, executing bool) bool {
		asked = append(asked, visibilityCall{Subject: id.Subject, Executing: executing})
		return executing || id.Subject == "root"
	}))
	e := mustExecWith(t, func(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (app, error) {
		if id.Subject != "root" {
			return app{}, agentcap.NewError(agentcap.CodeUnauthorized, "only root resets")
		}
		return app{User: id.UserID}, nil
	}, core.Config{}, admin)
	bob := caller("bob")
	if got := names(e.Registry().Visible(context.Background(), bob)); len(got) != 0 {
		t.Errorf("bob sees %v", got)
	}
	_, err := e.Execute(context.Background(), "admin.reset", bob, nil)
	if ce := coreErr(t, err); ce.Code != agentcap.CodeUnauthorized || ce.Stage != agentcap.StageContext || ce.Message != "only root resets" {
		t.Errorf("bob executes: %+v", ce)
	}
	want := []visibilityCall{{Subject: "bob", Executing: false}, {Subject: "bob", Executing: true}}
	if diff := cmp.Diff(want, asked); diff != "" {
		t.Errorf("predicate calls (-want +got):\n%s", diff)
	}
}
