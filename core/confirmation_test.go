package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

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

func confirmedExec(t *testing.T, runs *int, hooks ...core.Hook) *core.Executor[app, user] {
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
	e, err := core.NewExecutor(core.MustRegistry(pay), core.ExecutorConfig[app, user]{
		CreateContext: func(_ context.Context, u user, _ *core.Definition, _ any) (app, error) { return app{}, nil },
		Hooks:         hooks,
		// Sequential batches: the test counts runs without locks.
		BatchConcurrency: 1,
		Confirmation: core.ConfirmationConfig[user]{Confirmer: m, Subject: func(u user) string { return u.ID },
			Audience: "https://bank.example/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func codeOf(err error) core.Code {
	var ce *core.Error
	if errors.As(err, &ce) {
		return ce.Code
	}
	return ""
}

func TestPreviewAndConfirmation(t *testing.T) {
	ctx := context.Background()
	runs := 0
	var stages []core.Stage
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
	alice := user{ID: "alice"}
	args := []byte(`{"to":"bob","amount":30}`)

	res, err := e.PreviewDynamic(ctx, "pay", alice, args, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Data) != `{"to":"bob","amount":30,"balance_after":70}` || res.Confirmation == nil || runs != 0 {
		t.Fatalf("preview: %s %+v runs=%d", res.Data, res.Confirmation, runs)
	}

	// Without a token: refused, with the preview and a fresh token.
	_, err = e.ExecuteDynamic(ctx, "pay", alice, args, nil)
	var ce *core.Error
	if !errors.As(err, &ce) || ce.Code != core.CodeConfirmationRequired || ce.HTTPStatus() != 428 || runs != 0 {
		t.Fatalf("without a token: %v", err)
	}
	if p, _ := ce.Fields()["preview"].(json.RawMessage); string(p) != string(res.Data) {
		t.Errorf("428 preview %s", p)
	}
	fresh, _ := ce.Fields()["confirmation"].(map[string]string)
	if fresh["token"] == "" || fresh["expires_at"] == "" {
		t.Errorf("428 confirmation %v", fresh)
	}

	withToken := func(tok string) context.Context { return core.WithConfirmationToken(ctx, tok) }
	if _, err := e.ExecuteDynamic(withToken(res.Confirmation.Token), "pay", alice, []byte(`{"to":"bob","amount":31}`), nil); codeOf(err) != core.CodeConfirmationMismatch {
		t.Errorf("other arguments: %v", err)
	}
	if _, err := e.ExecuteDynamic(withToken(res.Confirmation.Token), "pay", user{ID: "mallory"}, args, nil); codeOf(err) != core.CodeInvalidConfirmation {
		t.Errorf("another caller: %v", err)
	}
	if _, err := e.ExecuteDynamic(withToken("cfm_forged"), "pay", alice, args, nil); codeOf(err) != core.CodeInvalidConfirmation {
		t.Errorf("forged: %v", err)
	}
	data, err := e.ExecuteDynamic(withToken(res.Confirmation.Token), "pay", alice, []byte(` {"amount":30, "to":"bob"}`), nil)
	if err != nil || string(data) != `{"paid":30}` || runs != 1 {
		t.Fatalf("confirmed: %s %v runs=%d", data, err, runs)
	}
	if _, err := e.ExecuteDynamic(withToken(res.Confirmation.Token), "pay", alice, args, nil); codeOf(err) != core.CodeConfirmationUsed {
		t.Errorf("again: %v", err)
	}
	if _, err := e.ExecuteDynamic(ctx, "pay", user{}, args, nil); codeOf(err) != core.CodeForbidden {
		t.Errorf("a caller without a subject: %v", err)
	}

	// Batch items carry their own tokens.
	results, err := e.ExecuteBatch(ctx, alice, []core.BatchCall{
		{ID: "a", Capability: "pay", Arguments: args},
		{ID: "b", Capability: "pay", Arguments: args, ConfirmationToken: fresh["token"]},
	}, nil)
	if err != nil || results[0].Err == nil || results[0].Err.Code != core.CodeConfirmationRequired || results[1].Err != nil || runs != 2 {
		t.Fatalf("batch: %+v %v runs=%d", results, err, runs)
	}
	if previews == 0 || stages[0] != core.StagePreview {
		t.Errorf("hook stages %v, previews %d", stages, previews)
	}
}

func TestPreviewNotSupportedAndDefinitionChecks(t *testing.T) {
	runs := 0
	e := confirmedExec(t, &runs)
	plain := core.MustDefine("plain", "No preview",
		func(context.Context, app, core.NoInput) (payOut, error) { return payOut{}, nil })
	pe := mustExec(t, core.ExecutorConfig[app, user]{}, plain)
	if _, err := pe.PreviewDynamic(context.Background(), "plain", user{ID: "a"}, nil, nil); codeOf(err) != core.CodePreviewNotSupported {
		t.Errorf("preview of plain: %v", err)
	}
	if _, err := e.PreviewDynamic(context.Background(), "nope", user{ID: "a"}, nil, nil); codeOf(err) != core.CodeUnknownCapability {
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
	if _, err := core.NewExecutor(core.MustRegistry(must), core.ExecutorConfig[app, user]{
		CreateContext: func(context.Context, user, *core.Definition, any) (app, error) { return app{}, nil },
	}); err == nil {
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
	e, err := core.NewExecutor(core.MustRegistry(pay), core.ExecutorConfig[app, user]{
		CreateContext: func(_ context.Context, u user, _ *core.Definition, _ any) (app, error) { return app{}, nil },
		Confirmation: core.ConfirmationConfig[user]{Confirmer: fc, Subject: func(u user) string { return u.ID },
			Audience: "https://bank.example/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	alice := user{ID: "agt_alice"}
	args := []byte(`{"to":"bob","amount":5}`)
	token := mustPreviewToken(t, e, alice, args)

	unavailable := func(what string, err error, word string) {
		t.Helper()
		var ce *core.Error
		if !errors.As(err, &ce) || ce.Code != core.CodeTemporarilyUnavailable || ce.Stage != core.StageConfirmation ||
			ce.HTTPStatus() != http.StatusServiceUnavailable || ce.WireCode() != "temporarily_unavailable" ||
			ce.RetryAfter() != core.UnavailableRetryAfter || !strings.Contains(ce.Message, word) || strings.Contains(ce.Message, "redis") {
			t.Errorf("%s: %v", what, err)
		}
		if !errors.Is(err, fc.fail) {
			t.Errorf("%s: the cause is lost: %v", what, err)
		}
	}
	fc.fail = errors.New("redis: connection refused")
	_, err = e.ExecuteDynamic(core.WithConfirmationToken(ctx, token), "pay", alice, args, nil)
	unavailable("consume", err, "not spent")
	_, err = e.ExecuteDynamic(ctx, "pay", alice, args, nil)
	unavailable("a call without a token", err, "cannot be issued")
	_, err = e.PreviewDynamic(ctx, "pay", alice, args, nil)
	unavailable("preview", err, "cannot be issued")
	if runs != 0 {
		t.Fatalf("%d runs while the Confirmer was down", runs)
	}

	// The caller's own end and an application's refusal keep their codes.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	fc.fail = context.Canceled
	if _, err := e.ExecuteDynamic(core.WithConfirmationToken(cctx, token), "pay", alice, args, nil); codeOf(err) != core.CodeCanceled {
		t.Errorf("canceled: %v", err)
	}
	fc.fail = core.NewAppError(http.StatusTooManyRequests, "slow_down", "too many tokens")
	if _, err := e.ExecuteDynamic(ctx, "pay", alice, args, nil); codeOf(err) != "slow_down" {
		t.Errorf("application error: %v", err)
	}

	// Back up: the token that failed was not spent.
	fc.fail = nil
	if _, err := e.ExecuteDynamic(core.WithConfirmationToken(ctx, token), "pay", alice, args, nil); err != nil || runs != 1 {
		t.Fatalf("after the outage: %v (%d runs)", err, runs)
	}
}
