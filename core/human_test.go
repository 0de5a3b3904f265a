package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
)

// fakePerson is a HumanConfirmer that records what it is asked and lets
// the test decide as the person would.
type fakePerson struct {
	mu     sync.Mutex
	asked  []core.HumanConfirmationRequest
	refuse error
	m      *confirm.Manager
}

func (f *fakePerson) RequestHumanConfirmation(_ context.Context, r core.HumanConfirmationRequest) (*core.HumanConfirmationPending, error) {
	if f.refuse != nil {
		return nil, f.refuse
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r.Binding.Arguments = append([]byte(nil), r.Binding.Arguments...)
	r.Preview = append(json.RawMessage(nil), r.Preview...)
	f.asked = append(f.asked, r)
	return &core.HumanConfirmationPending{
		Approval: core.ConfirmationApproval{Method: "device_authorization", VerificationURI: "https://bank.example/approve",
			VerificationURIComplete: "https://bank.example/approve?code=BCDF-GHJK", UserCode: "BCDF-GHJK", ExpiresIn: 600, Interval: 5},
		StatusURL: "https://bank.example/agent/confirmation?id=apr_1",
	}, nil
}

// approve is the person's yes to the last request: the token its status
// URL would hand out.
func (f *fakePerson) approve(t *testing.T) string {
	t.Helper()
	f.mu.Lock()
	r := f.asked[len(f.asked)-1]
	f.mu.Unlock()
	c, err := f.m.Issue(context.Background(), r.Binding)
	if err != nil {
		t.Fatal(err)
	}
	return c.Token
}

// codeNegativeAmount refuses a negative payment; codeNoPerson is a
// HumanConfirmer's refusal.
var (
	codeNegativeAmount = agentcap.NewCode("negative_amount", agentcap.CodeInvalidRequest)
	codeNoPerson       = agentcap.NewCode("no_person", agentcap.CodeUnauthorized)
)

// bigPayments needs a person's confirmation of payments above 50.
func bigPayments(_ context.Context, _ app, in payIn) (bool, error) {
	if in.Amount < 0 {
		return false, agentcap.NewError(codeNegativeAmount, "no negative payments")
	}
	return in.Amount > 50, nil
}

func humanExec(t *testing.T, runs *int, person core.HumanConfirmer, m *confirm.Manager) *core.Executor {
	t.Helper()
	pay := core.MustDefine("pay", "Pay someone",
		func(_ context.Context, _ app, in payIn) (payOut, error) { *runs++; return payOut{Paid: in.Amount}, nil },
		core.WithPreview(func(_ context.Context, _ app, in payIn) (payPreview, error) {
			return payPreview{To: in.To, Amount: in.Amount, BalanceTo: 100 - in.Amount}, nil
		}),
		core.WithHumanConfirmation(bigPayments))
	e, err := core.NewExecutor(core.MustRegistry(pay), anyContext, core.Config{
		BatchConcurrency: 1,
		Confirmation: core.ConfirmationConfig{Confirmer: m, Audience: "https://bank.example/", Human: person,
			// A rule that waives every confirmation does not waive a
			// person's.
			Rule: func(*core.Definition) bool { return false }},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func newManager(t *testing.T) *confirm.Manager {
	t.Helper()
	m, err := confirm.New(confirm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestHumanConfirmation(t *testing.T) {
	ctx := context.Background()
	alice := caller("agt_alice")
	m := newManager(t)
	person := &fakePerson{m: m}
	runs := 0
	e := humanExec(t, &runs, person, m)
	def, _ := e.Registry().Lookup("pay")
	if !def.RequiresConfirmation() || !e.NeedsConfirmation(def) {
		t.Fatal("pay: a person's confirmation implies a confirmation")
	}

	// A small payment is confirmed as any other: the preview's token.
	small := []byte(`{"to":"bob","amount":20}`)
	pv, err := e.Preview(ctx, "pay", alice, small)
	if err != nil || pv.HumanConfirmation || pv.Confirmation == nil {
		t.Fatalf("small preview: %+v %v", pv, err)
	}
	if _, err := e.Execute(core.WithConfirmationToken(ctx, pv.Confirmation.Token), "pay", alice, small); err != nil {
		t.Fatalf("small payment: %v", err)
	}

	// A big one: the preview hands out no token, and says why.
	big := []byte(`{"to":"bob","amount":80}`)
	pv, err = e.Preview(ctx, "pay", alice, big)
	if err != nil || !pv.HumanConfirmation || pv.Confirmation != nil || string(pv.Data) != `{"to":"bob","amount":80,"balance_after":20}` {
		t.Fatalf("big preview: %+v %v", pv, err)
	}
	if len(person.asked) != 0 {
		t.Fatal("a preview asked the person")
	}

	// Executed without a token, it asks the person and waits.
	_, err = e.Execute(ctx, "pay", alice, big)
	var ce *agentcap.Error
	if !asError(err, &ce) || ce.Code != agentcap.CodeConfirmationPending || ce.HTTPStatus() != http.StatusAccepted ||
		string(ce.Code) != "confirmation_pending" || ce.Stage != agentcap.StageConfirmation {
		t.Fatalf("big payment without a token: %v", err)
	}
	f := ce.Fields
	if f["status_url"] != "https://bank.example/agent/confirmation?id=apr_1" || string(f["preview"].(json.RawMessage)) != string(pv.Data) ||
		f["approval"].(core.ConfirmationApproval).UserCode != "BCDF-GHJK" {
		t.Errorf("pending fields: %v", f)
	}
	if len(person.asked) != 1 {
		t.Fatalf("the person was asked %d times", len(person.asked))
	}
	want := core.ConfirmationBinding{Subject: "agt_alice", Capability: "pay", Arguments: big, Audience: "https://bank.example/", Human: true}
	if diff := cmp.Diff(want, person.asked[0].Binding); diff != "" || person.asked[0].Definition != def || string(person.asked[0].Preview) != string(pv.Data) {
		t.Errorf("request (-want +got):\n%s", diff)
	}

	// The agent's own token does not stand in for the person.
	plain, err := m.Issue(ctx, core.ConfirmationBinding{Subject: "agt_alice", Capability: "pay", Arguments: big, Audience: "https://bank.example/"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Execute(core.WithConfirmationToken(ctx, plain.Token), "pay", alice, big); codeOf(err) != agentcap.CodeConfirmationMismatch {
		t.Errorf("the agent's own token: %v", err)
	}

	// The person's token runs the call once, and confirms no other.
	token := person.approve(t)
	withToken := core.WithConfirmationToken(ctx, token)
	if _, err := e.Execute(withToken, "pay", alice, []byte(`{"to":"bob","amount":81}`)); codeOf(err) != agentcap.CodeConfirmationMismatch {
		t.Errorf("another amount: %v", err)
	}
	if _, err := e.Execute(withToken, "pay", caller("agt_mallory"), big); codeOf(err) != agentcap.CodeInvalidConfirmation {
		t.Errorf("another agent: %v", err)
	}
	before := runs
	if out, err := e.Execute(withToken, "pay", alice, []byte(` {"amount":80, "to":"bob"}`)); err != nil || string(out) != `{"paid":80}` {
		t.Fatalf("confirmed: %s %v", out, err)
	}
	if _, err := e.Execute(withToken, "pay", alice, big); codeOf(err) != agentcap.CodeConfirmationUsed || runs != before+1 {
		t.Errorf("the token again: %v, %d runs", err, runs-before)
	}

	// A person's token confirms a call that needs one only.
	if _, err := e.Execute(core.WithConfirmationToken(ctx, person.approve(t)), "pay", alice, small); codeOf(err) != agentcap.CodeConfirmationMismatch {
		t.Errorf("a person's token for a small payment: %v", err)
	}

	// The rule's refusal is the call's.
	_, err = e.Execute(ctx, "pay", alice, []byte(`{"to":"bob","amount":-1}`))
	if ce := coreErr(t, err); ce.Code != codeNegativeAmount || ce.Stage != agentcap.StageConfirmation || ce.HTTPStatus() != http.StatusBadRequest {
		t.Errorf("the rule's error: %v", err)
	}

	// Batch items wait alone.
	res, err := e.ExecuteBatch(ctx, alice, []core.BatchCall{
		{ID: "big", Capability: "pay", Arguments: big},
		{ID: "small", Capability: "pay", Arguments: small, ConfirmationToken: mustPreviewToken(t, e, alice, small)},
	})
	if err != nil || res[0].Err == nil || res[0].Err.Code != agentcap.CodeConfirmationPending || res[1].Err != nil {
		t.Errorf("batch: %+v %v", res, err)
	}
}

func mustPreviewToken(t *testing.T, e *core.Executor, id *auth.Identity, args []byte) string {
	t.Helper()
	pv, err := e.Preview(context.Background(), "pay", id, args)
	if err != nil || pv.Confirmation == nil {
		t.Fatalf("preview: %+v %v", pv, err)
	}
	return pv.Confirmation.Token
}

func TestHumanConfirmationRefusals(t *testing.T) {
	ctx := context.Background()
	big := []byte(`{"to":"bob","amount":80}`)
	m := newManager(t)
	runs := 0

	// Without a HumanConfirmer nobody can be asked: refused, while the
	// calls the rule lets through still run.
	e := humanExec(t, &runs, nil, m)
	_, err := e.Execute(ctx, "pay", caller("agt_alice"), big)
	var ce *agentcap.Error
	if !asError(err, &ce) || ce.Code != agentcap.CodeUnauthorized || !strings.Contains(ce.Message, "person") {
		t.Errorf("no HumanConfirmer: %v", err)
	}
	small := []byte(`{"to":"bob","amount":5}`)
	if _, err := e.Execute(core.WithConfirmationToken(ctx, mustPreviewToken(t, e, caller("agt_alice"), small)), "pay", caller("agt_alice"), small); err != nil {
		t.Errorf("small payment without a HumanConfirmer: %v", err)
	}

	// The HumanConfirmer's refusal is the call's.
	e = humanExec(t, &runs, &fakePerson{m: m, refuse: agentcap.NewError(codeNoPerson, "nobody to ask")}, m)
	if _, err := e.Execute(ctx, "pay", caller("agt_robot"), big); codeOf(err) != codeNoPerson {
		t.Errorf("refused by the HumanConfirmer: %v", err)
	}
	e = humanExec(t, &runs, &fakePerson{m: m, refuse: errors.New("database down")}, m)
	_, err = e.Execute(ctx, "pay", caller("agt_alice"), big)
	if !asError(err, &ce) || ce.Code != agentcap.CodeTemporarilyUnavailable || ce.HTTPStatus() != http.StatusServiceUnavailable ||
		ce.RetryAfter != agentcap.UnavailableRetryAfter || strings.Contains(ce.Message, "database") || !strings.Contains(ce.Message, "did not run") {
		t.Errorf("failed HumanConfirmer: %v", err)
	}
	if runs != 1 {
		t.Errorf("%d runs, want the small payment's only", runs)
	}
}

func TestWithHumanConfirmationDefinition(t *testing.T) {
	handler := func(_ context.Context, _ app, in payIn) (payOut, error) { return payOut{}, nil }
	preview := core.WithPreview(func(_ context.Context, _ app, in payIn) (payPreview, error) { return payPreview{}, nil })
	cases := []struct {
		name string
		opts []core.Option
		want string
	}{
		{"without a preview", []core.Option{core.WithHumanConfirmation(bigPayments)}, "add WithPreview"},
		{"nil rule", []core.Option{preview, core.WithHumanConfirmation[app, payIn](nil)}, "nil rule"},
		{"another input", []core.Option{preview, core.WithHumanConfirmation(func(context.Context, app, transferIn) (bool, error) { return true, nil })}, "input"},
		{"another context", []core.Option{preview, core.WithHumanConfirmation(func(context.Context, *app, payIn) (bool, error) { return true, nil })}, "application context"},
	}
	for _, c := range cases {
		_, err := core.Define("pay", "Pay", handler, c.opts...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// A capability a person confirms needs a Confirmer, as any other
	// that must be confirmed.
	pay := core.MustDefine("pay", "Pay", handler, preview, core.WithHumanConfirmation(bigPayments))
	_, err := core.NewExecutor(core.MustRegistry(pay), anyContext, core.Config{})
	if err == nil || !strings.Contains(err.Error(), "Confirmer") {
		t.Errorf("executor without a Confirmer: %v", err)
	}
}

// asError sets *target to err when err is an *agentcap.Error, as every
// error of the executor is.
func asError(err error, target **agentcap.Error) bool {
	ce, ok := err.(*agentcap.Error)
	*target = ce
	return ok && ce != nil
}
