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

	"github.com/agentcap/agentcap/core"
)

// app is the application context of the test capabilities.
type app struct {
	User string
}

type user struct {
	ID string
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

func createContext(_ context.Context, p user, _ *core.Definition, _ any) (app, error) {
	if p.ID == "" {
		return app{}, core.Forbidden("no_user", "a user is required")
	}
	return app{User: p.ID}, nil
}

func mustExec(t *testing.T, cfg core.ExecutorConfig[app, user], defs ...core.Definer) *core.Executor[app, user] {
	t.Helper()
	reg, err := core.NewRegistry(defs...)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CreateContext == nil {
		cfg.CreateContext = createContext
	}
	e, err := core.NewExecutor(reg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func coreErr(t *testing.T, err error) *core.Error {
	t.Helper()
	var ce *core.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *core.Error", err, err)
	}
	return ce
}

var transferCap = core.MustDefine("transfer_money", "Move money between accounts.", transfer,
	core.WithRequiredConstraints("destination_account"), core.WithApproval(core.ApprovalWebAuthn), core.WithRisk(core.RiskHigh))

func TestExecuteDynamicSuccess(t *testing.T) {
	e := mustExec(t, core.ExecutorConfig[app, user]{}, transferCap)
	out, err := e.ExecuteDynamic(context.Background(), "transfer_money", user{ID: "alice"},
		[]byte(`{"source_account":"a","destination_account":"b","amount":12.5,"currency":"EUR"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), `{"transfer_id":"tr_1","amount":12.5}`; got != want {
		t.Fatalf("output = %s, want %s", got, want)
	}
}

func TestStrictInput(t *testing.T) {
	e := mustExec(t, core.ExecutorConfig[app, user]{}, transferCap)
	tests := []struct {
		name string
		args string
		want []core.Violation
	}{
		{"case variant key", `{"source_account":"a","destination_account":"b","Amount":1,"amount":1,"currency":"USD"}`,
			[]core.Violation{{Path: "/Amount"}}},
		{"case variant only", `{"source_account":"a","destination_account":"b","AMOUNT":1,"currency":"USD"}`,
			[]core.Violation{{Path: "/AMOUNT"}, {Path: "/amount"}}},
		{"duplicate key", `{"source_account":"a","destination_account":"b","amount":1,"amount":2,"currency":"USD"}`,
			[]core.Violation{{Path: "/amount"}}},
		{"unknown key", `{"source_account":"a","destination_account":"b","amount":1,"currency":"USD","admin":true}`,
			[]core.Violation{{Path: "/admin"}}},
		{"every violation reported", `{"source_account":"","amount":-1,"currency":"JPY","memo":"this memo is much too long"}`,
			[]core.Violation{{Path: "/amount"}, {Path: "/currency"}, {Path: "/destination_account"}, {Path: "/memo"}, {Path: "/source_account"}}},
		{"not an object", `[1,2]`, []core.Violation{{Path: ""}}},
		{"malformed", `{"amount":`, []core.Violation{{Path: ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.ExecuteDynamic(context.Background(), "transfer_money", user{ID: "alice"}, []byte(tt.args), nil)
			ce := coreErr(t, err)
			if ce.Code != core.CodeInvalidInput || ce.Stage != core.StageInput {
				t.Fatalf("got %s at %s, want invalid_input at input", ce.Code, ce.Stage)
			}
			if ce.HTTPStatus() != http.StatusBadRequest || ce.WireCode() != "invalid_request" {
				t.Errorf("status/wire = %d/%s", ce.HTTPStatus(), ce.WireCode())
			}
			var paths []core.Violation
			for _, v := range ce.Details {
				if v.Message == "" {
					t.Errorf("violation at %q has no message", v.Path)
				}
				paths = append(paths, core.Violation{Path: v.Path})
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
	e := mustExec(t, core.ExecutorConfig[app, user]{}, ping)
	for _, args := range []string{"", "null", " {} "} {
		if _, err := e.ExecuteDynamic(context.Background(), "ping", user{ID: "a"}, []byte(args), nil); err != nil {
			t.Errorf("args %q: %v", args, err)
		}
	}
	if _, err := e.ExecuteDynamic(context.Background(), "ping", user{ID: "a"}, []byte(`{"x":1}`), nil); coreErr(t, err).Code != core.CodeInvalidInput {
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
	e := mustExec(t, core.ExecutorConfig[app, user]{
		CreateContext: func(_ context.Context, _ user, _ *core.Definition, input any) (app, error) {
			seen = append(seen, &input.(pointerIn).Items[0])
			return app{}, nil
		},
	}, def)
	authorize := func(_ context.Context, inv *core.Invocation) error {
		seen = append(seen, &inv.Input.(pointerIn).Items[0])
		if got := string(inv.Arguments["items"]); got != `["x"]` {
			t.Errorf("raw argument snapshot = %s", got)
		}
		return nil
	}
	if _, err := e.ExecuteDynamic(context.Background(), "same", user{}, []byte(`{"items":["x"]}`), authorize); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 || seen[0] != seen[1] || seen[1] != seen[2] {
		t.Fatalf("stages saw different values: %v", seen)
	}
}

func TestAuthorizeRefuses(t *testing.T) {
	e := mustExec(t, core.ExecutorConfig[app, user]{}, transferCap)
	args := []byte(`{"source_account":"a","destination_account":"b","amount":1,"currency":"USD"}`)
	_, err := e.ExecuteDynamic(context.Background(), "transfer_money", user{ID: "a"}, args,
		func(context.Context, *core.Invocation) error { return errors.New("secret policy detail") })
	ce := coreErr(t, err)
	if ce.Code != core.CodeForbidden || ce.Stage != core.StageAuthorize || ce.HTTPStatus() != 403 || strings.Contains(ce.Message, "secret") {
		t.Fatalf("got %+v", ce)
	}
	_, err = e.ExecuteDynamic(context.Background(), "transfer_money", user{ID: "a"}, args,
		func(context.Context, *core.Invocation) error {
			return core.Forbidden("constraint_violated", "outside the grant").With("violations", []string{"amount"})
		})
	ce = coreErr(t, err)
	if ce.WireCode() != "constraint_violated" || ce.HTTPStatus() != 403 || ce.Fields()["violations"] == nil {
		t.Fatalf("got %+v", ce)
	}
}

func TestErrorRedactionAndPassThrough(t *testing.T) {
	const secret = "postgres://admin:hunter2@db.internal/ledger"
	failing := func(err error, panics bool) core.Handler[app, echoIn, echoOut] {
		return func(context.Context, app, echoIn) (echoOut, error) {
			if panics {
				panic(secret)
			}
			return echoOut{}, err
		}
	}
	appErr := core.Conflict("insufficient_funds", "the account has insufficient funds").WithCause(errors.New(secret))
	tests := []struct {
		name       string
		handler    core.Handler[app, echoIn, echoOut]
		wantCode   core.Code
		wantStatus int
		wantWire   string
		wantMsg    string
	}{
		{"plain error", failing(fmt.Errorf("query failed: %s", secret), false), core.CodeExecutionFailed, 500, "internal_error", "internal error"},
		{"panic", failing(nil, true), core.CodeExecutionFailed, 500, "internal_error", "internal error"},
		{"app error", failing(fmt.Errorf("wrapped: %w", appErr), false), "insufficient_funds", 409, "insufficient_funds", "the account has insufficient funds"},
		{"deadline", failing(context.DeadlineExceeded, false), core.CodeTimeout, 504, "timeout", ""},
		{"canceled", failing(context.Canceled, false), core.CodeCanceled, 499, "canceled", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustExec(t, core.ExecutorConfig[app, user]{}, core.MustDefine("fail", "Fails.", tt.handler))
			_, err := e.ExecuteDynamic(context.Background(), "fail", user{ID: "a"}, []byte(`{"text":"x"}`), nil)
			ce := coreErr(t, err)
			if ce.Code != tt.wantCode || ce.Stage != core.StageHandler || ce.HTTPStatus() != tt.wantStatus || ce.WireCode() != tt.wantWire {
				t.Fatalf("got code=%s stage=%s status=%d wire=%s", ce.Code, ce.Stage, ce.HTTPStatus(), ce.WireCode())
			}
			if tt.wantMsg != "" && ce.Message != tt.wantMsg {
				t.Errorf("message = %q, want %q", ce.Message, tt.wantMsg)
			}
			if strings.Contains(ce.Message, "hunter2") || strings.Contains(fmt.Sprint(ce.Details), "hunter2") {
				t.Errorf("public parts leak the cause: %q", ce.Message)
			}
			if tt.wantCode == "insufficient_funds" {
				var ae *core.AppError
				if !errors.As(err, &ae) || ae.Code != "insufficient_funds" {
					t.Errorf("errors.As(*AppError) failed")
				}
			}
		})
	}
}

func TestContextStageErrors(t *testing.T) {
	def := core.MustDefine("echo", "Echo.", func(_ context.Context, a app, in echoIn) (echoOut, error) {
		return echoOut{Text: in.Text, User: a.User}, nil
	})
	e := mustExec(t, core.ExecutorConfig[app, user]{}, def)
	_, err := e.ExecuteDynamic(context.Background(), "echo", user{}, []byte(`{"text":"x"}`), nil)
	ce := coreErr(t, err)
	if ce.Stage != core.StageContext || ce.WireCode() != "no_user" || ce.HTTPStatus() != 403 {
		t.Fatalf("got %+v", ce)
	}
	e = mustExec(t, core.ExecutorConfig[app, user]{
		CreateContext: func(context.Context, user, *core.Definition, any) (app, error) {
			return app{}, fmt.Errorf("membership lookup: %w", core.ErrForbidden)
		},
	}, def)
	_, err = e.ExecuteDynamic(context.Background(), "echo", user{}, []byte(`{"text":"x"}`), nil)
	if ce := coreErr(t, err); ce.Code != core.CodeForbidden || ce.Stage != core.StageContext {
		t.Fatalf("got %+v", ce)
	}
}

func TestUnknownCapability(t *testing.T) {
	e := mustExec(t, core.ExecutorConfig[app, user]{}, transferCap)
	_, err := e.ExecuteDynamic(context.Background(), "nope", user{}, nil, nil)
	ce := coreErr(t, err)
	if ce.Code != core.CodeUnknownCapability || ce.Stage != core.StageLookup || ce.HTTPStatus() != 404 || ce.WireCode() != "capability_not_found" {
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
	e := mustExec(t, core.ExecutorConfig[app, user]{}, def)
	_, err := e.ExecuteDynamic(context.Background(), "bad", user{ID: "a"}, nil, nil)
	ce := coreErr(t, err)
	if ce.Code != core.CodeInvalidOutput || ce.Stage != core.StageOutput || ce.HTTPStatus() != 500 || ce.WireCode() != "internal_error" {
		t.Fatalf("got %+v", ce)
	}
	if len(ce.Details) != 0 || strings.Contains(ce.Message, "status") {
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
	e := mustExec(t, core.ExecutorConfig[app, user]{}, slow)
	_, err := e.ExecuteDynamic(context.Background(), "slow", user{ID: "a"}, nil, nil)
	if ce := coreErr(t, err); ce.Code != core.CodeTimeout || ce.HTTPStatus() != 504 {
		t.Fatalf("got %+v", ce)
	}
	// A caller that gave up yields canceled, before any context is built.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = e.ExecuteDynamic(ctx, "slow", user{ID: "a"}, nil, nil)
	if ce := coreErr(t, err); ce.Code != core.CodeCanceled || ce.Stage != core.StageContext {
		t.Fatalf("got %+v", ce)
	}
}

func TestTypedExecute(t *testing.T) {
	e := mustExec(t, core.ExecutorConfig[app, user]{}, transferCap)
	out, err := core.Execute(context.Background(), e, transferCap, user{ID: "a"},
		transferIn{Source: "a", Destination: "b", Amount: 3, Currency: "GBP"})
	if err != nil || out.Amount != 3 {
		t.Fatalf("got %+v, %v", out, err)
	}
	_, err = core.Execute(context.Background(), e, transferCap, user{ID: "a"}, transferIn{Source: "a", Destination: "b", Amount: 3, Currency: "JPY"})
	if ce := coreErr(t, err); ce.Code != core.CodeInvalidInput || len(ce.Details) != 1 || ce.Details[0].Path != "/currency" {
		t.Fatalf("got %+v", ce)
	}
	other := core.MustDefine("transfer_money", "Same name, other definition.", transfer)
	if _, err := core.Execute(context.Background(), e, other, user{ID: "a"}, transferIn{}); coreErr(t, err).Code != core.CodeUnknownCapability {
		t.Fatalf("an unregistered capability ran")
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
	e := mustExec(t, core.ExecutorConfig[app, user]{Hooks: append(broken, record)}, transferCap)

	good := []byte(`{"source_account":"a","destination_account":"b","amount":2,"currency":"USD"}`)
	out, err := e.ExecuteDynamic(context.Background(), "transfer_money", user{ID: "alice"}, good, nil)
	if err != nil || string(out) != `{"transfer_id":"tr_1","amount":2}` {
		t.Fatalf("failing hooks changed the result: %s, %v", out, err)
	}
	if len(events) != 2 || events[0].Phase != core.PhaseStart || events[1].Phase != core.PhaseEnd {
		t.Fatalf("events = %+v", events)
	}
	end := events[1]
	if end.Stage != core.StageOutput || end.Definition != transferCap.Definition() || end.Principal != (user{ID: "alice"}) ||
		end.App != (app{User: "alice"}) || end.Input.(transferIn).Amount != 2 || end.Output.(transferOut).ID != "tr_1" ||
		string(end.OutputJSON) != string(out) || end.Duration <= 0 {
		t.Errorf("end event = %+v", end)
	}

	events = nil
	raw := []byte(`{"source_account":"s3cr3t-raw","destination_account":"b","amount":-5,"currency":"USD"}`)
	if _, err := e.ExecuteDynamic(context.Background(), "transfer_money", user{ID: "alice"}, raw, nil); err == nil {
		t.Fatal("invalid input accepted")
	}
	if len(events) != 2 || events[1].Phase != core.PhaseError || events[1].Stage != core.StageInput {
		t.Fatalf("events = %+v", events)
	}
	if ev := events[1]; ev.Input != nil || ev.App != nil || ev.Output != nil || ev.OutputJSON != nil ||
		strings.Contains(fmt.Sprintf("%+v", ev), "s3cr3t-raw") {
		t.Errorf("an input-stage failure event carries input: %+v", ev)
	}

	events = nil
	_, _ = e.ExecuteDynamic(context.Background(), "transfer_money", user{ID: "alice"}, good,
		func(context.Context, *core.Invocation) error { return core.ErrForbidden })
	if ev := events[1]; ev.Stage != core.StageAuthorize || ev.Input == nil || ev.App != nil {
		t.Errorf("authorize failure event = %+v", ev)
	}

	events = nil
	_, _ = e.ExecuteDynamic(context.Background(), "missing", user{ID: "alice"}, nil, nil)
	if len(events) != 1 || events[0].Phase != core.PhaseError || events[0].Stage != core.StageLookup || events[0].Definition != nil {
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
		if in.Text == "conflict" {
			return echoOut{}, core.Conflict("busy", "try later")
		}
		return echoOut{Text: in.Text, User: a.User}, nil
	})
	e := mustExec(t, core.ExecutorConfig[app, user]{BatchConcurrency: 3, MaxBatch: 40}, echo)
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
			c.Arguments = json.RawMessage(`{"text":"conflict"}`)
			w = "busy"
		}
		calls = append(calls, c)
		want = append(want, c.ID+" "+w)
	}
	results, err := e.ExecuteBatch(context.Background(), user{ID: "u"}, calls, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range results {
		if r.Err != nil {
			got = append(got, r.ID+" "+r.Err.WireCode())
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
	if _, err := e.ExecuteBatch(context.Background(), user{ID: "u"}, make([]core.BatchCall, 41), nil); coreErr(t, err).Code != core.CodeInvalidInput {
		t.Errorf("oversized batch accepted")
	}
	if _, err := e.ExecuteBatch(context.Background(), user{ID: "u"}, nil, nil); err == nil {
		t.Errorf("empty batch accepted")
	}
}

func TestExecutorChecksContextType(t *testing.T) {
	other := core.MustDefine("other", "Wants another context.", func(context.Context, string, core.NoInput) (echoOut, error) {
		return echoOut{}, nil
	})
	reg := core.MustRegistry(other)
	_, err := core.NewExecutor(reg, core.ExecutorConfig[app, user]{CreateContext: createContext})
	if err == nil || !strings.Contains(err.Error(), "other") {
		t.Fatalf("err = %v", err)
	}
	if _, err := core.NewExecutor(reg, core.ExecutorConfig[string, user]{}); err == nil {
		t.Fatal("missing CreateContext accepted")
	}
}

func TestVisibility(t *testing.T) {
	admin := core.MustDefine("admin.reset", "Reset everything.", func(context.Context, app, core.NoInput) (echoOut, error) {
		return echoOut{}, nil
	}, core.VisibleTo(func(_ context.Context, p user) bool { return p.ID == "root" }))
	e := mustExec(t, core.ExecutorConfig[app, user]{}, admin, transferCap)
	names := func(defs []*core.Definition) []string {
		var out []string
		for _, d := range defs {
			out = append(out, d.Name())
		}
		return out
	}
	if got := names(e.Visible(context.Background(), user{ID: "root"})); !cmp.Equal(got, []string{"admin.reset", "transfer_money"}) {
		t.Errorf("root sees %v", got)
	}
	if got := names(e.Visible(context.Background(), user{ID: "bob"})); !cmp.Equal(got, []string{"transfer_money"}) {
		t.Errorf("bob sees %v", got)
	}
	if _, ok := e.Describe(context.Background(), user{ID: "bob"}, "admin.reset"); ok {
		t.Errorf("bob can describe admin.reset")
	}
}
