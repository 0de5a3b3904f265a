package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
)

type payIn struct {
	To     string `json:"to"`
	Amount int    `json:"amount"`
}

type payOut struct {
	Paid int `json:"paid"`
}

type payPreview struct {
	To        string `json:"to"`
	Amount    int    `json:"amount"`
	BalanceTo int    `json:"balance_after"`
}

func confirmedExec(t *testing.T, runs *int, hooks ...core.Hook) *core.Executor {
	t.Helper()
	pay := core.MustDefine("pay", "Pay someone",
		func(_ context.Context, _ app, in payIn) (payOut, error) { *runs++; return payOut{Paid: in.Amount}, nil },
		core.WithRisk(core.RiskHigh),
		core.WithPreview(func(_ context.Context, _ app, in payIn) (payPreview, error) {
			return payPreview{To: in.To, Amount: in.Amount, BalanceTo: 100 - in.Amount}, nil
		}))
	m, err := confirm.New(confirm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := core.NewExecutor(core.MustRegistry(pay), anyContext, core.Config{
		Hooks: hooks,
		// Sequential batches: the test counts runs without locks.
		BatchConcurrency: 1,
		Confirmation:     core.ConfirmationConfig{Confirmer: m, Audience: "https://bank.example/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// codeOf returns the code of err, an *agentcap.Error, and "" for any
// other error.
func codeOf(err error) agentcap.Code {
	if ce, ok := err.(*agentcap.Error); ok {
		return ce.Code
	}
	return ""
}

func TestPreviewAndConfirmation(t *testing.T) {
	ctx := context.Background()
	runs := 0
	var stages []agentcap.Stage
	var previews int
	hook := func(_ context.Context, ev core.Event) error {
		if ev.Phase != core.PhaseStart {
			stages = append(stages, ev.Stage)
		}
		if ev.Preview {
			previews++
		}
		return nil
	}
	e := confirmedExec(t, &runs, hook)
	def, _ := e.Registry().Lookup("pay")
	if !def.SupportsPreview() || !def.NeedsConfirmation() || def.RequiresConfirmation() || !e.NeedsConfirmation(def) {
		t.Fatal("pay: preview and confirmation flags")
	}
	if def.PreviewSchema() == nil {
		t.Fatal("no preview schema")
	}
	alice := caller("alice")
	args := []byte(`{"to":"bob","amount":30}`)

	res, err := e.Preview(ctx, "pay", alice, args)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Data) != `{"to":"bob","amount":30,"balance_after":70}` || res.Confirmation == nil || runs != 0 {
		t.Fatalf("preview: %s %+v runs=%d", res.Data, res.Confirmation, runs)
	}

	// Without a token: refused, with the preview and a fresh token.
	_, err = e.Execute(ctx, "pay", alice, args)
	ce, _ := err.(*agentcap.Error)
	if ce == nil || ce.Code != agentcap.CodeConfirmationRequired || ce.HTTPStatus() != 428 || runs != 0 {
		t.Fatalf("without a token: %v", err)
	}
	if p, _ := ce.Fields["preview"].(json.RawMessage); string(p) != string(res.Data) {
		t.Errorf("428 preview %s", p)
	}
	fresh, _ := ce.Fields["confirmation"].(map[string]string)
	if fresh["token"] == "" || fresh["expires_at"] == "" {
		t.Errorf("428 confirmation %v", fresh)
	}

	withToken := func(tok string) context.Context { return core.WithConfirmationToken(ctx, tok) }
	if _, err := e.Execute(withToken(res.Confirmation.Token), "pay", alice, []byte(`{"to":"bob","amount":31}`)); codeOf(err) != agentcap.CodeConfirmationMismatch {
		t.Errorf("other arguments: %v", err)
	}
	if _, err := e.Execute(withToken(res.Confirmation.Token), "pay", caller("mallory"), args); codeOf(err) != agentcap.CodeInvalidConfirmation {
		t.Errorf("another caller: %v", err)
	}
	if _, err := e.Execute(withToken("cfm_forged"), "pay", alice, args); codeOf(err) != agentcap.CodeInvalidConfirmation {
		t.Errorf("forged: %v", err)
	}
	data, err := e.Execute(withToken(res.Confirmation.Token), "pay", alice, []byte(` {"amount":30, "to":"bob"}`))
	if err != nil || string(data) != `{"paid":30}` || runs != 1 {
		t.Fatalf("confirmed: %s %v runs=%d", data, err, runs)
	}
	if _, err := e.Execute(withToken(res.Confirmation.Token), "pay", alice, args); codeOf(err) != agentcap.CodeConfirmationUsed {
		t.Errorf("again: %v", err)
	}
	if _, err := e.Execute(ctx, "pay", nil, args); codeOf(err) != agentcap.CodeUnauthorized {
		t.Errorf("a caller without an identity: %v", err)
	}

	// Batch items carry their own tokens.
	results, err := e.ExecuteBatch(ctx, alice, []core.BatchCall{
		{ID: "a", Capability: "pay", Arguments: args},
		{ID: "b", Capability: "pay", Arguments: args, ConfirmationToken: fresh["token"]},
	})
	if err != nil || results[0].Err == nil || results[0].Err.Code != agentcap.CodeConfirmationRequired || results[1].Err != nil || runs != 2 {
		t.Fatalf("batch: %+v %v runs=%d", results, err, runs)
	}
	if previews == 0 || stages[0] != agentcap.StagePreview {
		t.Errorf("hook stages %v, previews %d", stages, previews)
	}
}

func TestPreviewNotSupportedAndDefinitionChecks(t *testing.T) {
	runs := 0
	e := confirmedExec(t, &runs)
	plain := core.MustDefine("plain", "No preview",
		func(context.Context, app, core.NoInput) (payOut, error) { return payOut{}, nil })
	pe := mustExec(t, core.Config{}, plain)
	if _, err := pe.Preview(context.Background(), "plain", caller("a"), nil); codeOf(err) != agentcap.CodePreviewNotSupported {
		t.Errorf("preview of plain: %v", err)
	}
	if _, err := e.Preview(context.Background(), "nope", caller("a"), nil); codeOf(err) != agentcap.CodeCapabilityNotFound {
		t.Errorf("preview of unknown: %v", err)
	}
	if _, err := core.Define("p", "Wrong preview input",
		func(context.Context, app, payIn) (payOut, error) { return payOut{}, nil },
		core.WithPreview(func(context.Context, app, core.NoInput) (payOut, error) { return payOut{}, nil })); err == nil {
		t.Error("a preview of another input type was accepted")
	}
	must := core.MustDefine("must", "Needs a confirmation",
		func(context.Context, app, core.NoInput) (payOut, error) { return payOut{}, nil }, core.WithConfirmation())
	if !must.Definition().RequiresConfirmation() || !must.Definition().NeedsConfirmation() {
		t.Error("WithConfirmation flags")
	}
	if _, err := core.NewExecutor(core.MustRegistry(must), anyContext, core.Config{}); err == nil {
		t.Error("a capability WithConfirmation without a Confirmer was accepted")
	}
}

// flakyConfirmer is a Confirmer whose store can be taken down.
type flakyConfirmer struct {
	core.Confirmer
	fail error
}

func (f *flakyConfirmer) Issue(ctx context.Context, b core.ConfirmationBinding) (core.Confirmation, error) {
	if f.fail != nil {
		return core.Confirmation{}, f.fail
	}
	return f.Confirmer.Issue(ctx, b)
}

func (f *flakyConfirmer) Consume(ctx context.Context, token string, b core.ConfirmationBinding) error {
	if f.fail != nil {
		return f.fail
	}
	return f.Confirmer.Consume(ctx, token, b)
}

func TestConfirmerDown(t *testing.T) {
	ctx := context.Background()
	runs := 0
	fc := &flakyConfirmer{Confirmer: newManager(t)}
	pay := core.MustDefine("pay", "Pay someone",
		func(_ context.Context, _ app, in payIn) (payOut, error) { runs++; return payOut{Paid: in.Amount}, nil },
		core.WithRisk(core.RiskHigh),
		core.WithPreview(func(_ context.Context, _ app, in payIn) (payPreview, error) { return payPreview{To: in.To}, nil }))
	e, err := core.NewExecutor(core.MustRegistry(pay), anyContext, core.Config{
		Confirmation: core.ConfirmationConfig{Confirmer: fc, Audience: "https://bank.example/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	alice := caller("agt_alice")
	args := []byte(`{"to":"bob","amount":5}`)
	token := mustPreviewToken(t, e, alice, args)

	unavailable := func(what string, err error, word string) {
		t.Helper()
		ce, _ := err.(*agentcap.Error)
		if ce == nil || ce.Code != agentcap.CodeTemporarilyUnavailable || ce.Stage != agentcap.StageConfirmation ||
			ce.HTTPStatus() != http.StatusServiceUnavailable || string(ce.Code) != "temporarily_unavailable" ||
			ce.RetryAfter != agentcap.UnavailableRetryAfter || !strings.Contains(ce.Message, word) || strings.Contains(ce.Message, "redis") {
			t.Errorf("%s: %v", what, err)
		}
		if !errors.Is(err, fc.fail) {
			t.Errorf("%s: the cause is lost: %v", what, err)
		}
	}
	fc.fail = errors.New("redis: connection refused")
	_, err = e.Execute(core.WithConfirmationToken(ctx, token), "pay", alice, args)
	unavailable("consume", err, "not spent")
	_, err = e.Execute(ctx, "pay", alice, args)
	unavailable("a call without a token", err, "cannot be issued")
	_, err = e.Preview(ctx, "pay", alice, args)
	unavailable("preview", err, "cannot be issued")
	if runs != 0 {
		t.Fatalf("%d runs while the Confirmer was down", runs)
	}

	// The caller's own end and an application's refusal keep their codes.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	fc.fail = context.Canceled
	if _, err := e.Execute(core.WithConfirmationToken(cctx, token), "pay", alice, args); codeOf(err) != agentcap.CodeCancelled {
		t.Errorf("canceled: %v", err)
	}
	fc.fail = agentcap.NewError(agentcap.CodeRateLimited, "too many tokens").WithRetryAfter(3 * time.Second)
	_, err = e.Execute(ctx, "pay", alice, args)
	if ce, _ := err.(*agentcap.Error); ce == nil || ce.Code != agentcap.CodeRateLimited || ce.Message != "too many tokens" ||
		ce.RetryAfter != 3*time.Second || ce.Stage != agentcap.StageConfirmation {
		t.Errorf("application error: %v", err)
	}

	// Back up: the token that failed was not spent.
	fc.fail = nil
	if _, err := e.Execute(core.WithConfirmationToken(ctx, token), "pay", alice, args); err != nil || runs != 1 {
		t.Fatalf("after the outage: %v (%d runs)", err, runs)
	}
}

// bindingLog is a Confirmer that records the bindings it is asked to
// issue and consume tokens for.
type bindingLog struct {
	core.Confirmer
	mu               sync.Mutex
	issued, consumed []core.ConfirmationBinding
}

func (l *bindingLog) Issue(ctx context.Context, b core.ConfirmationBinding) (core.Confirmation, error) {
	l.mu.Lock()
	l.issued = append(l.issued, copyBinding(b))
	l.mu.Unlock()
	return l.Confirmer.Issue(ctx, b)
}

func (l *bindingLog) Consume(ctx context.Context, token string, b core.ConfirmationBinding) error {
	l.mu.Lock()
	l.consumed = append(l.consumed, copyBinding(b))
	l.mu.Unlock()
	return l.Confirmer.Consume(ctx, token, b)
}

func copyBinding(b core.ConfirmationBinding) core.ConfirmationBinding {
	b.Arguments = append([]byte(nil), b.Arguments...)
	return b
}

// TestConfirmationBindsTheIdentitySubject: a token is bound to the
// caller's Subject, whatever else its identity names; a caller without an
// identity, or with an empty Subject, cannot confirm: unauthorized.
func TestConfirmationBindsTheIdentitySubject(t *testing.T) {
	ctx := context.Background()
	var runs atomic.Int32
	pay := core.MustDefine("pay", "Pay someone",
		func(_ context.Context, _ app, in payIn) (payOut, error) {
			runs.Add(1)
			return payOut{Paid: in.Amount}, nil
		},
		core.WithConfirmation(),
		core.WithPreview(func(_ context.Context, _ app, in payIn) (payPreview, error) { return payPreview{To: in.To}, nil }))
	bl := &bindingLog{Confirmer: newManager(t)}
	e := mustExecWith(t, anyContext, core.Config{
		Confirmation: core.ConfirmationConfig{Confirmer: bl, Audience: "https://bank.example/"},
	}, pay, echoCap)
	args := []byte(`{"to":"bob","amount":5}`)
	ann := &auth.Identity{Subject: "sub_ann", AgentID: "agt_1", HostID: "hst_1", UserID: "usr_ann"}

	pv, err := e.Preview(ctx, "pay", ann, args)
	if err != nil || pv.Confirmation == nil {
		t.Fatalf("preview: %+v %v", pv, err)
	}
	want := core.ConfirmationBinding{Subject: "sub_ann", Capability: "pay", Arguments: args, Audience: "https://bank.example/"}
	if len(bl.issued) != 1 {
		t.Fatalf("%d tokens issued", len(bl.issued))
	}
	if diff := cmp.Diff(want, bl.issued[0]); diff != "" {
		t.Errorf("issued binding (-want +got):\n%s", diff)
	}

	// The agent and the user do not own the token: another Subject with
	// the same names is another caller.
	twin := &auth.Identity{Subject: "sub_twin", AgentID: "agt_1", HostID: "hst_1", UserID: "usr_ann"}
	withToken := core.WithConfirmationToken(ctx, pv.Confirmation.Token)
	if _, err := e.Execute(withToken, "pay", twin, args); codeOf(err) != agentcap.CodeInvalidConfirmation {
		t.Errorf("another subject: %v", err)
	}
	// The Subject does: the same Subject with other names spends it.
	same := &auth.Identity{Subject: "sub_ann", AgentID: "agt_2", UserID: "usr_other"}
	if _, err := e.Execute(withToken, "pay", same, args); err != nil || runs.Load() != 1 {
		t.Fatalf("the same subject: %v (%d runs)", err, runs.Load())
	}
	for _, b := range bl.consumed {
		if b.Subject != "sub_twin" && b.Subject != "sub_ann" {
			t.Errorf("consumed binding of subject %q", b.Subject)
		}
	}

	// Without an identity, or with an empty Subject, nobody can confirm.
	bl.issued = nil
	for _, id := range []*auth.Identity{nil, {AgentID: "agt_1", UserID: "usr_ann"}} {
		_, err := e.Execute(ctx, "pay", id, args)
		ce := coreErr(t, err)
		if ce.Code != agentcap.CodeUnauthorized || ce.Stage != agentcap.StageConfirmation || ce.HTTPStatus() != http.StatusForbidden ||
			ce.Fields != nil {
			t.Errorf("execute as %+v: %+v", id, ce)
		}
		_, err = e.Execute(core.WithConfirmationToken(ctx, "cfm_any"), "pay", id, args)
		if ce := coreErr(t, err); ce.Code != agentcap.CodeUnauthorized || ce.Stage != agentcap.StageConfirmation {
			t.Errorf("execute with a token as %+v: %+v", id, ce)
		}
		_, err = e.Preview(ctx, "pay", id, args)
		if ce := coreErr(t, err); ce.Code != agentcap.CodeUnauthorized || ce.Stage != agentcap.StageConfirmation {
			t.Errorf("preview as %+v: %+v", id, ce)
		}
		res, err := e.ExecuteBatch(ctx, id, []core.BatchCall{{ID: "a", Capability: "pay", Arguments: args}})
		if err != nil || res[0].Err == nil || res[0].Err.Code != agentcap.CodeUnauthorized {
			t.Errorf("batch as %+v: %+v %v", id, res, err)
		}
		// A capability that needs no confirmation runs for it.
		if _, err := e.Execute(ctx, "echo", id, []byte(`{"text":"x"}`)); err != nil {
			t.Errorf("echo as %+v: %v", id, err)
		}
	}
	if len(bl.issued) != 0 || runs.Load() != 1 {
		t.Errorf("callers that cannot confirm got %d tokens and %d runs", len(bl.issued), runs.Load()-1)
	}
}
