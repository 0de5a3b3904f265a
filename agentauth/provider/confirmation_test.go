package provider_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/store"
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
	To           string `json:"to"`
	Amount       int    `json:"amount"`
	BalanceAfter int    `json:"balance_after"`
}

// payCapability pays someone; a person confirms payments above 100, and
// its approval strength asks for the extra step.
var payCapability = core.MustDefine("pay", "Pay someone from your account.",
	func(_ context.Context, _ struct{}, in payIn) (payOut, error) { return payOut{Paid: in.Amount}, nil },
	core.WithApproval(core.ApprovalWebAuthn), core.WithRisk(core.RiskHigh),
	core.WithPreview(func(_ context.Context, _ struct{}, in payIn) (payPreview, error) {
		return payPreview{To: in.To, Amount: in.Amount, BalanceAfter: 1000 - in.Amount}, nil
	}),
	core.WithHumanConfirmation(func(_ context.Context, _ struct{}, in payIn) (bool, error) { return in.Amount > 100, nil }))

// newConfirmEnv is a provider whose location's executor asks the
// provider for a person's confirmation of big payments. mods change the
// provider's configuration.
func newConfirmEnv(t testing.TB, mods ...func(*provider.Config)) *env {
	t.Helper()
	return newConfirmEnvWrapped(t, nil, mods...)
}

// newConfirmPageEnv is newConfirmEnv with the approval page and the
// development sign-in for alice and bob at /login.
func newConfirmPageEnv(t testing.TB) *env {
	wrap, signIn := devLoginSite()
	return newConfirmEnvWrapped(t, wrap, signIn)
}

// newConfirmEnvWrapped is newConfirmEnv with the site passed through
// wrap, when not nil.
func newConfirmEnvWrapped(t testing.TB, wrap func(http.Handler) http.Handler, mods ...func(*provider.Config)) *env {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	c := &clock{t: time.Now().Truncate(time.Second)}
	st := store.NewMemory(c.Now)
	reg := core.MustRegistry(payCapability,
		core.MustDefine("echo", "Return the message.", func(_ context.Context, _ struct{}, in echoIO) (echoIO, error) { return in, nil }))
	mgr, err := confirm.New(confirm.Config{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	cfg := provider.Config{Issuer: issuer, ProviderName: "test", Store: st, Registry: reg, Now: c.Now,
		PollInterval: 2 * time.Second, Confirmer: mgr, DevPresenceCode: true}
	for _, m := range mods {
		m(&cfg)
	}
	p, err := provider.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exec, err := core.NewExecutor(reg, noContext, core.Config{
		// A token is bound to the identity's subject: the agent.
		Confirmation: core.ConfirmationConfig{
			Confirmer: mgr,
			Audience:  p.DefaultLocation(),
			Human:     p.HumanConfirmer(),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return serveEnv(t, srv, p, exec, wrap, st, c)
}

// payer registers an agent of user with a grant of pay, approved.
func (e *env) payer(user string) (*key, string) {
	e.t.Helper()
	h, a := newKey(e.t), newKey(e.t)
	r := e.register(h, a, map[string]any{"name": "payer", "host_name": "laptop", "capabilities": []any{"pay", "echo"}})
	if r.status != 200 {
		e.t.Fatalf("register: %d %s", r.status, r.raw)
	}
	e.approve(r, user, nil)
	return a, r.str("agent_id")
}

// pay executes pay with amount as the agent, with a confirmation token
// when token is not empty.
func (e *env) pay(a *key, agentID string, amount int, token string) response {
	e.t.Helper()
	body := map[string]any{"capability": "pay", "arguments": map[string]any{"to": "bob", "amount": amount}}
	if token != "" {
		body["confirmation_token"] = token
	}
	return e.do(http.MethodPost, "/capability/execute", e.agentToken(a, agentID, e.url+"/capability/execute", nil), body)
}

// pollConfirmation polls a status URL as the agent, with a token for aud.
func (e *env) pollConfirmation(a *key, agentID, statusURL, aud string) response {
	e.t.Helper()
	return e.do(http.MethodGet, strings.TrimPrefix(statusURL, e.url), e.agentToken(a, agentID, aud, nil), nil)
}

func TestHumanConfirmation(t *testing.T) {
	e := newConfirmEnv(t)
	ctx := context.Background()
	a, agentID := e.payer("user_alice")

	// A small payment is the agent's to confirm.
	if r := e.pay(a, agentID, 50, ""); r.status != 428 || r.code() != "confirmation_required" {
		t.Fatalf("small payment: %d %s", r.status, r.raw)
	}

	// A big one waits for Alice.
	r := e.pay(a, agentID, 500, "")
	if r.status != http.StatusAccepted || r.str("status") != "confirmation_pending" || r.header.Get("Retry-After") != "2" {
		t.Fatalf("big payment: %d %s", r.status, r.raw)
	}
	ap := r.body["approval"].(map[string]any)
	code, _ := ap["user_code"].(string)
	wantApproval := map[string]any{"method": "device_authorization", "verification_uri": e.url + "/approve",
		"verification_uri_complete": e.url + "/approve?code=" + url.QueryEscape(code), "user_code": code,
		"expires_in": float64(600), "interval": float64(2)}
	if diff := cmp.Diff(wantApproval, ap); diff != "" || len(code) != 9 {
		t.Errorf("approval (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"to": "bob", "amount": float64(500), "balance_after": float64(500)}, r.body["preview"]); diff != "" {
		t.Errorf("preview (-want +got):\n%s", diff)
	}
	statusURL := r.str("status_url")
	if !strings.HasPrefix(statusURL, e.url+provider.PathConfirmation+"?id=apr_") {
		t.Fatalf("status_url %q", statusURL)
	}

	// Until Alice decides: pending, and slow_down when polled too often.
	if r := e.pollConfirmation(a, agentID, statusURL, e.url); r.status != 400 || r.code() != agentcap.CodeAuthorizationPending {
		t.Errorf("first poll: %d %s", r.status, r.raw)
	}
	if r := e.pollConfirmation(a, agentID, statusURL, e.url); r.status != 400 || r.code() != agentcap.CodeSlowDown {
		t.Errorf("quick poll: %d %s", r.status, r.raw)
	}
	e.clock.Advance(2 * time.Second)
	// A token for the location of the call is good too; one for
	// somewhere else is not.
	if r := e.pollConfirmation(a, agentID, statusURL, e.url+"/capability/execute"); r.status != 400 || r.code() != agentcap.CodeAuthorizationPending {
		t.Errorf("poll for the location: %d %s", r.status, r.raw)
	}
	// Another agent, even of Alice's, learns nothing.
	b, otherID := e.payer("user_alice")
	if r := e.pollConfirmation(b, otherID, statusURL, e.url); r.status != 404 || r.code() != agentcap.CodeConfirmationNotFound {
		t.Errorf("another agent's poll: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodGet, provider.PathConfirmation+"?id="+url.QueryEscape(strings.TrimPrefix(statusURL, e.url+provider.PathConfirmation+"?id=")), "", nil); r.status != 401 {
		t.Errorf("poll without a token: %d %s", r.status, r.raw)
	}

	// Alice sees the call, the agent and the preview.
	v, err := e.p.PendingApproval(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind != provider.KindConfirmation || v.UserID != "user_alice" || v.AgentID != agentID || v.AgentName != "payer" ||
		v.Call == nil || v.Call.Capability != "pay" || string(v.Call.Preview) != `{"to":"bob","amount":500,"balance_after":500}` ||
		len(v.Capabilities) != 1 || v.Capabilities[0].Approval != core.ApprovalWebAuthn {
		t.Errorf("the request as Alice sees it: %+v %+v", v, v.Call)
	}
	want := []provider.PreviewItem{{Name: "to", Value: "bob"}, {Name: "amount", Value: "500"}, {Name: "balance_after", Value: "500"}}
	if diff := cmp.Diff(want, v.Call.Items()); diff != "" {
		t.Errorf("preview items (-want +got):\n%s", diff)
	}
	waiting, err := e.p.UserApprovals(ctx, "user_alice")
	if err != nil || len(waiting) != 1 || waiting[0].Kind != provider.KindConfirmation {
		t.Errorf("Alice's waiting requests: %v %v", waiting, err)
	}

	// Only Alice decides, and the webauthn-strength capability asks
	// for the extra step.
	if err := e.p.Decide(ctx, provider.Decision{UserCode: code, UserID: "user_bob", PresenceConfirmed: true}); !errors.Is(err, provider.ErrWrongUser) {
		t.Errorf("Bob decides: %v", err)
	}
	if err := e.p.Decide(ctx, provider.Decision{UserCode: code, UserID: "user_alice"}); !errors.Is(err, provider.ErrPresenceRequired) {
		t.Errorf("without the extra step: %v", err)
	}
	if err := e.p.Decide(ctx, provider.Decision{UserCode: code, UserID: "user_alice", PresenceConfirmed: true}); err != nil {
		t.Fatalf("Alice confirms: %v", err)
	}

	// The next poll hands out the token, once.
	e.clock.Advance(2 * time.Second)
	r = e.pollConfirmation(a, agentID, statusURL, e.url)
	conf, _ := r.body["confirmation"].(map[string]any)
	token, _ := conf["token"].(string)
	if r.status != 200 || r.str("status") != "approved" || !strings.HasPrefix(token, "cfm_") || conf["expires_at"] == nil {
		t.Fatalf("poll after the decision: %d %s", r.status, r.raw)
	}
	e.clock.Advance(2 * time.Second)
	if r := e.pollConfirmation(a, agentID, statusURL, e.url); r.status != 409 || r.code() != "confirmation_used" {
		t.Errorf("poll after the token was handed out: %d %s", r.status, r.raw)
	}

	// The token runs that call once, and no other.
	if r := e.pay(a, agentID, 501, token); r.status != 409 || r.code() != "confirmation_mismatch" {
		t.Errorf("another amount: %d %s", r.status, r.raw)
	}
	if r := e.pay(a, agentID, 500, token); r.status != 200 || string(r.raw) != `{"data":{"paid":500}}`+"\n" {
		t.Errorf("confirmed payment: %d %s", r.status, r.raw)
	}
	if r := e.pay(a, agentID, 500, token); r.status != 409 || r.code() != "confirmation_used" {
		t.Errorf("the token again: %d %s", r.status, r.raw)
	}
	// The agent's own token does not stand in for Alice's.
	pv := e.do(http.MethodPost, "/capability/preview", e.agentToken(a, agentID, e.url+"/capability/execute", nil),
		map[string]any{"capability": "pay", "arguments": map[string]any{"to": "bob", "amount": 500}})
	if pv.status != 200 || pv.body["requires_human_confirmation"] != true || pv.body["confirmation"] != nil {
		t.Errorf("preview of a big payment: %d %s", pv.status, pv.raw)
	}

	// Refused: 403 confirmation_denied.
	r = e.pay(a, agentID, 700, "")
	code = r.body["approval"].(map[string]any)["user_code"].(string)
	if err := e.p.Decide(ctx, provider.Decision{UserCode: code, UserID: "user_alice", Deny: true}); err != nil {
		t.Fatal(err)
	}
	if p := e.pollConfirmation(a, agentID, r.str("status_url"), e.url); p.status != 403 || p.code() != agentcap.CodeConfirmationDenied {
		t.Errorf("refused: %d %s", p.status, p.raw)
	}

	// Nobody decides: expired_token.
	r = e.pay(a, agentID, 800, "")
	e.clock.Advance(provider.DefaultApprovalLifetime)
	if p := e.pollConfirmation(a, agentID, r.str("status_url"), e.url); p.status != 400 || p.code() != agentcap.CodeExpiredToken {
		t.Errorf("expired: %d %s", p.status, p.raw)
	}

	// The agent stays as it was: its calls' requests are not its own.
	if ag, err := e.st.GetAgent(ctx, agentID); err != nil || ag.Status != agentcap.StatusActive {
		t.Errorf("agent after its calls' requests: %+v %v", ag, err)
	}
}

func TestHumanConfirmationRefusals(t *testing.T) {
	ctx := context.Background()
	// Without a Confirmer the provider asks nobody.
	if hc := newEnv(t).p.HumanConfirmer(); hc != nil {
		t.Errorf("HumanConfirmer without a Confirmer: %v", hc)
	}
	if r := newEnv(t).do(http.MethodGet, provider.PathConfirmation+"?id=apr_x", "", nil); r.status != 404 {
		t.Errorf("the route without a Confirmer: %d %s", r.status, r.raw)
	}

	e := newConfirmEnv(t, func(c *provider.Config) {
		c.Policy.GrantAutonomous = func(context.Context, *store.Host, *core.Definition) bool { return true }
	})
	hc := e.p.HumanConfirmer()
	req := func(subject string) error {
		_, err := hc.RequestHumanConfirmation(ctx, core.HumanConfirmationRequest{
			Binding:    core.ConfirmationBinding{Subject: subject, Capability: "pay", Arguments: []byte(`{"to":"bob","amount":500}`), Human: true},
			Definition: payCapability.Definition(), Preview: []byte(`{}`)})
		return err
	}
	var ae *agentcap.Error
	if err := req("agt_nobody"); !errors.As(err, &ae) || ae.HTTPStatus() != 403 {
		t.Errorf("unknown agent: %v", err)
	}
	// An autonomous agent acts for nobody: nobody can confirm.
	r := e.register(newKey(t), newKey(t), map[string]any{"name": "robot", "mode": "autonomous", "capabilities": []any{"pay"}})
	if r.status != 200 || r.str("status") != "active" {
		t.Fatalf("autonomous registration: %d %s", r.status, r.raw)
	}
	if err := req(r.str("agent_id")); !errors.As(err, &ae) || ae.HTTPStatus() != 403 || !strings.Contains(ae.Message, "no user") {
		t.Errorf("autonomous agent: %v", err)
	}
	// Unknown ids are not found.
	a, agentID := e.payer("user_alice")
	if p := e.pollConfirmation(a, agentID, e.url+provider.PathConfirmation+"?id=apr_nope", e.url); p.status != 404 {
		t.Errorf("unknown id: %d %s", p.status, p.raw)
	}
	if p := e.pollConfirmation(a, agentID, e.url+provider.PathConfirmation, e.url); p.status != 404 {
		t.Errorf("no id: %d %s", p.status, p.raw)
	}
}

// With a Notifier, the user is told of a call to confirm, with the link
// to review it.
func TestHumanConfirmationNotifies(t *testing.T) {
	box := &inbox{}
	e := newConfirmEnv(t, func(c *provider.Config) { c.Notifier = box })
	a, agentID := e.payer("user_alice")
	r := e.pay(a, agentID, 500, "")
	if r.status != http.StatusAccepted {
		t.Fatalf("big payment: %d %s", r.status, r.raw)
	}
	var calls []provider.Notification
	for _, n := range box.all(e.p) {
		if n.Kind == provider.KindConfirmation {
			calls = append(calls, n)
		}
	}
	if len(calls) != 1 || calls[0].UserID != "user_alice" || calls[0].AgentName != "payer" ||
		!slices.Equal(calls[0].Capabilities, []string{"pay"}) || !strings.HasPrefix(calls[0].ReviewURL, e.url+"/approve?request=apr_") {
		t.Errorf("notifications %+v", calls)
	}
}

// TestConfirmationOnlyForItsUser asks Alice to confirm a call and looks
// for it as Bob, who has its code and its id: the approval page, the
// user API and "Your agents" answer him as if there were no such
// request, and never show him the preview.
func TestConfirmationOnlyForItsUser(t *testing.T) {
	e := newConfirmPageEnv(t)
	a, agentID := e.payer("alice")
	r := e.pay(a, agentID, 500, "")
	if r.status != http.StatusAccepted {
		t.Fatalf("big payment: %d %s", r.status, r.raw)
	}
	code := r.body["approval"].(map[string]any)["user_code"].(string)
	id := strings.TrimPrefix(r.str("status_url"), e.url+provider.PathConfirmation+"?id=")

	alice, bob := newBrowser(t, e), newBrowser(t, e)
	alice.signIn("alice", "/")
	bob.signIn("bob", "/")
	if status, page, _ := alice.get("/approve?code=" + url.QueryEscape(code)); status != 200 || !strings.Contains(page, "Balance after") {
		t.Fatalf("Alice's review: %d %s", status, page)
	}
	unknownCode := "BCDF-GHJK"
	if unknownCode == code {
		unknownCode = "CDFG-HJKL"
	}
	pairs := []struct{ name, real, unknown string }{
		{"by code", "/approve?code=" + url.QueryEscape(code), "/approve?code=" + unknownCode},
		{"by id", "/approve?request=" + url.QueryEscape(id), "/approve?request=apr_unknown"},
		{"user API", provider.PathUserApprovals + "/" + url.PathEscape(id), provider.PathUserApprovals + "/apr_unknown"},
	}
	for _, p := range pairs {
		status, page, _ := bob.get(p.real)
		wantStatus, want, _ := bob.get(p.unknown)
		if status != wantStatus || page != want || status == http.StatusOK {
			t.Errorf("%s: Bob gets %d\n%s\nwant, as for an unknown request, %d\n%s", p.name, status, page, wantStatus, want)
		}
		if strings.Contains(page, "balance_after") || strings.Contains(page, "Balance after") {
			t.Errorf("%s: Bob sees the preview", p.name)
		}
	}
	// The form answers him as it answers an unknown code.
	form := func(code string) url.Values {
		return url.Values{"code": {code}, "csrf": {"x"}, "step": {"review"}, "action": {"allow"}, "capability": {"pay"}}
	}
	status, page := bob.post("/approve", form(code), nil)
	wantStatus, want := bob.post("/approve", form(unknownCode), nil)
	if status != wantStatus || page != want {
		t.Errorf("Bob posts the code: %d\n%s\nwant %d\n%s", status, page, wantStatus, want)
	}
	if _, page, _ := bob.get(provider.PathUserApprovals); strings.Contains(page, id) {
		t.Errorf("Bob's waiting requests list Alice's: %s", page)
	}
}

// TestConfirmationListedOnlyForItsUser has an agent act for Bob under a
// host linked to Alice: the call it asks Bob to confirm is not Alice's
// to see, though the agent runs on her host.
func TestConfirmationListedOnlyForItsUser(t *testing.T) {
	e := newConfirmPageEnv(t)
	ctx := context.Background()
	_, agentID := e.payer("alice")
	payer, err := e.st.GetAgent(ctx, agentID)
	if err != nil {
		t.Fatal(err)
	}
	k := newKey(t)
	bobs := &store.Agent{ID: "agt_bobs", Name: "bob's payer", HostID: payer.HostID, UserID: "bob", Mode: agentcap.ModeDelegated,
		Status: agentcap.StatusActive, AgentKey: store.AgentKey{PublicKey: k.jwk()},
		Grants: []store.Grant{{Capability: "pay", Status: agentcap.StatusActive, GrantedBy: "bob"}}}
	if err := e.st.CreateAgent(ctx, bobs); err != nil {
		t.Fatal(err)
	}
	_, err = e.p.HumanConfirmer().RequestHumanConfirmation(ctx, core.HumanConfirmationRequest{
		Binding:    core.ConfirmationBinding{Subject: bobs.ID, Capability: "pay", Arguments: []byte(`{"to":"carol","amount":500}`), Human: true},
		Definition: payCapability.Definition(), Preview: []byte(`{"to":"carol","amount":500,"balance_after":500}`)})
	if err != nil {
		t.Fatal(err)
	}
	for user, want := range map[string]int{"alice": 0, "bob": 1} {
		waiting, err := e.p.UserApprovals(ctx, user)
		if err != nil || len(waiting) != want {
			t.Errorf("%s's waiting requests: %d %v, want %d", user, len(waiting), err, want)
		}
	}
	alice := newBrowser(t, e)
	alice.signIn("alice", "/")
	for _, path := range []string{"/agents", provider.PathUserApprovals} {
		if _, page, _ := alice.get(path); strings.Contains(page, "carol") || strings.Contains(page, "confirm a call") {
			t.Errorf("%s shows Alice the call Bob must confirm:\n%s", path, page)
		}
	}
}
