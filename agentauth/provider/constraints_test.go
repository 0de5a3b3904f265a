package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/core"
)

type sendIn struct {
	To     string  `json:"to"`
	Amount float64 `json:"amount"`
}

// constrainedRegistry serves echo and send, which a grant may hold only
// with a constraint on to, and whose approval asks for the in-person
// step.
func constrainedRegistry(c *provider.Config) {
	c.Registry = core.MustRegistry(
		core.MustDefine("echo", "Return the message.",
			func(_ context.Context, _ struct{}, in echoIO) (echoIO, error) { return in, nil }),
		core.MustDefine("send", "Send money.",
			func(_ context.Context, _ struct{}, in sendIn) (transferOut, error) { return transferOut{true}, nil },
			core.WithRequiredConstraints("to"), core.WithApproval(core.ApprovalWebAuthn), core.WithRisk(core.RiskHigh)))
}

// TestDecideNeedsRequiredConstraints allows send, requested without the
// constraint it requires, through Decide and the user API: both refuse,
// naming the field, and the request stays pending until a decision sets
// the constraint.
func TestDecideNeedsRequiredConstraints(t *testing.T) {
	e := newUserAPIEnv(t, constrainedRegistry)
	ctx := context.Background()
	// The host is Alice's, so that its next agent's request is on her
	// list.
	h := newKey(t)
	e.connected(h, newKey(t), "alice", "echo")
	r := e.register(h, newKey(t), map[string]any{"name": "payer", "capabilities": []any{"echo", "send"}})
	code := r.body["approval"].(map[string]any)["user_code"].(string)

	v, err := e.p.PendingApproval(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range v.Capabilities {
		if want := map[string]string{"echo": "", "send": "to"}[c.Name]; strings.Join(c.MissingConstraints, ",") != want {
			t.Errorf("%s: missing constraints %v, want %q", c.Name, c.MissingConstraints, want)
		}
	}
	for _, d := range []provider.Decision{
		{UserCode: code, UserID: "alice", PresenceConfirmed: true},
		{UserCode: code, UserID: "alice", PresenceConfirmed: true, Capabilities: []string{"send"}},
		{UserCode: code, UserID: "alice", PresenceConfirmed: true, Capabilities: []string{"send"},
			Constraints: map[string]map[string]json.RawMessage{"send": {"amount": json.RawMessage(`{"max":5}`)}}},
	} {
		if err := e.p.Decide(ctx, d); !errors.Is(err, provider.ErrInvalidDecision) || !strings.Contains(err.Error(), "send can only be allowed with a constraint on to") {
			t.Errorf("Decide %+v: %v", d, err)
		}
	}
	u := e.apiUser(t, "alice")
	id := v.ID
	got := u.do(http.MethodGet, provider.PathUserApprovals+"/"+id, nil)
	caps, _ := got.body["capabilities"].([]any)
	if len(caps) != 2 || !strings.Contains(string(got.raw), `"missing_constraints":["to"]`) {
		t.Errorf("the request in the user API: %s", got.raw)
	}
	res := u.do(http.MethodPost, provider.PathUserApprovals+"/"+id, map[string]any{"decision": "approve", "presence_code": code})
	if res.status != http.StatusBadRequest || res.code() != "invalid_request" || !strings.Contains(res.str("message"), "constraint on to") {
		t.Errorf("approve without the constraint: %d %s", res.status, res.raw)
	}
	res = u.do(http.MethodPost, provider.PathUserApprovals+"/"+id, map[string]any{"decision": "approve", "presence_code": code,
		"constraints": map[string]any{"send": map[string]any{"to": map[string]any{"nope": 1}}}})
	if res.status != http.StatusBadRequest {
		t.Errorf("approve with a malformed constraint: %d %s", res.status, res.raw)
	}
	if _, err := e.p.PendingApproval(ctx, code); err != nil {
		t.Fatalf("the refused decisions closed the request: %v", err)
	}

	res = u.do(http.MethodPost, provider.PathUserApprovals+"/"+id, map[string]any{"decision": "approve", "presence_code": code,
		"constraints": map[string]any{"send": map[string]any{"to": "bob"}}})
	if res.status != http.StatusOK {
		t.Fatalf("approve with the constraint: %d %s", res.status, res.raw)
	}
	ag, err := e.st.GetAgent(ctx, r.str("agent_id"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range ag.Grants {
		if g.Capability == "send" && (g.Status != "active" || string(g.Constraints["to"]) != `"bob"`) {
			t.Errorf("send's grant: %+v", g)
		}
	}
}

// TestApprovalPageAsksForRequiredConstraints allows send on the
// approval page: the page asks for the limit on to, refuses to allow
// without it or with one it cannot read, carries it through the
// in-person step, and the grant it makes runs calls within the limit.
func TestApprovalPageAsksForRequiredConstraints(t *testing.T) {
	e := newPageEnv(t, constrainedRegistry)
	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "payer", "capabilities": []any{"echo", "send"}})
	code := r.body["approval"].(map[string]any)["user_code"].(string)
	b := newBrowser(t, e)
	b.signIn("alice", "/")
	status, page, _ := b.get("/approve?code=" + url.QueryEscape(code))
	if status != http.StatusOK || !strings.Contains(page, `name="constraint:send:to"`) {
		t.Fatalf("review: %d %s", status, page)
	}
	origin := map[string]string{"Origin": e.url}
	review := func(page, to string) (int, string) {
		t.Helper()
		m := csrfField.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no form: %s", page)
		}
		return b.post("/approve", url.Values{"csrf": {m[1]}, "code": {code}, "step": {"review"}, "action": {"allow"},
			"capability": {"echo", "send"}, "constraint:send:to": {to}}, origin)
	}
	for _, tt := range []struct{ to, notice string }{
		{"", "Send can only be allowed with a constraint on to."},
		{"  ", "Send can only be allowed with a constraint on to."},
		{`{"max":`, "The limit on to of send: it is not valid JSON."},
		{`{"nope":1}`, "The limit on to of send"},
	} {
		status, next := review(page, tt.to)
		if status != http.StatusUnprocessableEntity || !strings.Contains(next, tt.notice) || !strings.Contains(next, `name="constraint:send:to"`) {
			t.Errorf("limit %q: %d, want 422 with %q\n%s", tt.to, status, tt.notice, next)
		}
		page = next
	}
	// The limit goes with the in-person step, which allows send.
	status, confirm := review(page, "bob")
	if status != http.StatusOK || !strings.Contains(confirm, `name="presence_code"`) || !strings.Contains(confirm, `name="constraint:send:to" value="bob"`) {
		t.Fatalf("review with the limit: %d %s", status, confirm)
	}
	m := csrfField.FindStringSubmatch(confirm)
	status, done := b.post("/approve", url.Values{"csrf": {m[1]}, "code": {code}, "step": {"confirm"}, "action": {"allow"},
		"capability": {"echo", "send"}, "constraint:send:to": {"bob"}, "presence_code": {code}}, origin)
	if status != http.StatusOK || !strings.Contains(done, "You allowed") {
		t.Fatalf("confirm: %d %s", status, done)
	}
	e.clock.Advance(2e9)
	agentID := r.str("agent_id")
	send := func(to string) response {
		return e.do(http.MethodPost, "/capability/execute", e.agentToken(a, agentID, e.url+"/capability/execute", nil),
			map[string]any{"capability": "send", "arguments": map[string]any{"to": to, "amount": 5}})
	}
	if res := send("bob"); res.status != http.StatusOK {
		t.Errorf("send to bob: %d %s", res.status, res.raw)
	}
	if res := send("carol"); res.status != http.StatusForbidden || res.code() != "constraint_violated" {
		t.Errorf("send to carol: %d %s", res.status, res.raw)
	}
}

type payAbroadIn struct {
	To       string  `json:"to"`
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// unitRegistry serves echo and pay_abroad, whose amount has its currency
// for unit.
func unitRegistry(c *provider.Config) {
	c.Registry = core.MustRegistry(
		core.MustDefine("echo", "Return the message.",
			func(_ context.Context, _ struct{}, in echoIO) (echoIO, error) { return in, nil }),
		core.MustDefine("pay_abroad", "Pay in any currency.",
			func(_ context.Context, _ struct{}, in payAbroadIn) (transferOut, error) {
				return transferOut{true}, nil
			},
			core.WithRequiredConstraints("to"), core.WithUnit("amount", "currency"), core.WithApproval(core.ApprovalSession)))
}

// TestApprovalPageShowsUnits reviews requests for pay_abroad with a
// bound on the amount: the page shows the bound with its currency, asks
// for the currency when the request leaves it out, and Decide refuses to
// grant the bound without it.
func TestApprovalPageShowsUnits(t *testing.T) {
	e := newPageEnv(t, unitRegistry)
	ctx := context.Background()
	b := newBrowser(t, e)
	b.signIn("alice", "/")
	request := func(constraints map[string]any) string {
		t.Helper()
		r := e.register(newKey(t), newKey(t), map[string]any{"name": "payer",
			"capabilities": []any{map[string]any{"name": "pay_abroad", "constraints": constraints}}})
		if r.status != 200 {
			t.Fatalf("register: %d %s", r.status, r.raw)
		}
		return r.body["approval"].(map[string]any)["user_code"].(string)
	}

	pinned := request(map[string]any{"to": "bob", "amount": map[string]any{"max": 500}, "currency": "USD"})
	if _, page, _ := b.get("/approve?code=" + url.QueryEscape(pinned)); !strings.Contains(page, "<code>amount</code> at most 500 USD</li>") {
		t.Errorf("the bound is not shown with its currency:\n%s", page)
	}
	several := request(map[string]any{"to": "bob", "amount": map[string]any{"max": 500}, "currency": map[string]any{"in": []string{"USD", "GBP"}}})
	if _, page, _ := b.get("/approve?code=" + url.QueryEscape(several)); !strings.Contains(page, "<code>amount</code> at most 500, in currency one of &#34;USD&#34;, &#34;GBP&#34;</li>") {
		t.Errorf("the bound is not shown with its currencies:\n%s", page)
	}

	loose := request(map[string]any{"to": "bob", "amount": map[string]any{"max": 500}})
	_, page, _ := b.get("/approve?code=" + url.QueryEscape(loose))
	if !strings.Contains(page, "<code>amount</code> at most 500, in any currency</li>") || !strings.Contains(page, `name="constraint:pay_abroad:currency"`) {
		t.Errorf("the page does not ask for the currency:\n%s", page)
	}
	err := e.p.Decide(ctx, provider.Decision{UserCode: loose, UserID: "alice"})
	if !errors.Is(err, provider.ErrInvalidDecision) || !strings.Contains(err.Error(), "pay_abroad can only be allowed with a constraint on currency") {
		t.Errorf("Decide with the currency free: %v", err)
	}
	m := csrfField.FindStringSubmatch(page)
	status, done := b.post("/approve", url.Values{"csrf": {m[1]}, "code": {loose}, "step": {"review"}, "action": {"allow"},
		"capability": {"pay_abroad"}, "constraint:pay_abroad:currency": {"USD"}}, map[string]string{"Origin": e.url})
	if status != http.StatusOK || !strings.Contains(done, "You allowed") {
		t.Fatalf("allow with the currency: %d %s", status, done)
	}
	if _, agents, _ := b.get("/agents"); !strings.Contains(agents, "<code>amount</code> at most 500 USD</li>") {
		t.Errorf("Your agents does not show the bound with its currency:\n%s", agents)
	}
}
