package provider_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/internal/browsertest"
)

// signIn follows the redirect to the development sign-in and signs in
// as user.
func signIn(t *testing.T, ctx context.Context, user string) {
	t.Helper()
	browsertest.WaitPath(t, ctx, "/login")
	browsertest.Do(t, ctx, "signing in", chromedp.Click(chromedp.CSS("#login-"+user)))
}

// TestApprovalPageInChromium walks the approval page in a real headless
// Chromium: sign in as alice, review the agent, allow a subset with a
// webauthn-strength capability, pass the confirmation step, and keep a
// screenshot of the review page and of the outcome.
func TestApprovalPageInChromium(t *testing.T) {
	ctx := browsertest.New(t)
	e := newPageEnv(t)
	h := newKey(t)
	r := e.register(h, newKey(t), map[string]any{"name": "Budget helper", "host_name": "alice-laptop", "reason": "Pay the rent",
		"capabilities": []any{"echo", "check_balance", map[string]any{"name": "transfer", "constraints": map[string]any{"amount": map[string]any{"max": 900}, "currency": map[string]any{"in": []string{"EUR"}}}}}})
	if r.status != http.StatusOK {
		t.Fatalf("register: %d %s", r.status, r.raw)
	}
	ap := r.body["approval"].(map[string]any)
	code := ap["user_code"].(string)

	browsertest.Do(t, ctx, "opening the verification URI", chromedp.Navigate(ap["verification_uri_complete"].(string)))
	signIn(t, ctx, "alice")
	browsertest.Do(t, ctx, "the review page", chromedp.WaitVisible(chromedp.CSS("#allow")))
	want := map[string]string{"#user": "Alice", "#agent-name": "Budget helper", "#host-name": "alice-laptop first connection from this host",
		"#mode": "delegated", "#reason": "Pay the rent", "#user-code": code}
	for sel, v := range want {
		if got := browsertest.Text(t, ctx, sel); got != v {
			t.Errorf("%s = %q, want %q", sel, got, v)
		}
	}
	transfer := browsertest.Text(t, ctx, "#cap-transfer")
	for _, s := range []string{"needs in-person confirmation", "at most 900", `one of "EUR"`, "high risk"} {
		if !strings.Contains(transfer, s) {
			t.Errorf("transfer entry %q lacks %q", transfer, s)
		}
	}
	nav := browsertest.Value(t, ctx, "reading the navigation", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#nav a"), a => a.textContent + (a.getAttribute("aria-current") ? "*" : ""))`))
	if !slices.Equal(nav, []string{"Approve an agent*", "Your agents"}) {
		t.Errorf("navigation %q", nav)
	}
	browsertest.Screenshot(t, ctx, "approval-page.png")

	// Allow echo and transfer, not check_balance.
	browsertest.Do(t, ctx, "allowing a subset",
		chromedp.Click(chromedp.CSS(`#cap-check_balance input[type=checkbox]`)),
		chromedp.Click(chromedp.CSS("#allow")),
		chromedp.WaitVisible(chromedp.CSS("#presence")))
	if s := browsertest.Text(t, ctx, "#strong"); s != "transfer" {
		t.Errorf("capabilities to confirm: %q", s)
	}
	// A wrong confirmation is refused and asked again.
	browsertest.Do(t, ctx, "a wrong confirmation",
		chromedp.SendKeys(chromedp.CSS("#presence"), "BBBB-BBBB"),
		chromedp.Click(chromedp.CSS("#confirm")),
		chromedp.WaitVisible(chromedp.CSS("#notice")),
		chromedp.WaitVisible(chromedp.CSS("#presence")))
	browsertest.Do(t, ctx, "the right confirmation",
		chromedp.SendKeys(chromedp.CSS("#presence"), strings.ToLower(code)),
		chromedp.Click(chromedp.CSS("#confirm")),
		chromedp.WaitVisible(chromedp.CSS("#outcome")))
	if s := browsertest.Text(t, ctx, "#outcome"); s != "You allowed Budget helper: echo, transfer." {
		t.Errorf("outcome %q", s)
	}
	browsertest.Screenshot(t, ctx, "approval-done.png")
	e.clock.Advance(2 * time.Second)
	st := e.do(http.MethodGet, provider.PathStatus+"?agent_id="+r.str("agent_id"), e.hostToken(h, nil), nil)
	if g := grants(st); st.str("status") != "active" || g["echo"] != "active" || g["transfer"] != "active" || g["check_balance"] != "denied" || st.str("user_id") != "alice" {
		t.Errorf("agent after the page: %s", st.raw)
	}
}

// TestAgentsPageInChromium walks "Your agents" in headless Chromium: a
// CIBA request addressed to alice appears under "Waiting for you" with
// its binding message; she reviews it on the approval page and allows
// it; the agent's grants, with their constraints, are listed; she
// revokes one grant, and the agent can no longer use it.
func TestAgentsPageInChromium(t *testing.T) {
	ctx := browsertest.New(t)
	box := &inbox{}
	e := newPageEnv(t, func(c *provider.Config) { c.Notifier = box })
	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "Budget helper", "host_name": "alice-laptop", "capabilities": []any{
		"echo", map[string]any{"name": "check_balance", "constraints": map[string]any{"message": map[string]any{"in": []string{"acc_1", "acc_2"}}}}}})
	e.approve(r, "alice", nil)
	id := r.str("agent_id")
	rc := e.do(http.MethodPost, provider.PathRequestCapability, e.agentToken(a, id, e.url, nil),
		map[string]any{"capabilities": []any{"transfer"}, "preferred_method": "ciba", "binding_message": "Rent for May"})
	binding, _ := rc.body["approval"].(map[string]any)["binding_message"].(string)
	if rc.status != http.StatusOK || !strings.HasPrefix(binding, "Rent for May [") {
		t.Fatalf("CIBA request: %d %s", rc.status, rc.raw)
	}
	sent := box.all(e.p)
	if len(sent) != 1 || sent[0].UserID != "alice" {
		t.Fatalf("notifications %+v", sent)
	}
	apID := sent[0].ApprovalID
	code := bindingCode.FindStringSubmatch(binding)[1]

	browsertest.Do(t, ctx, "opening Your agents", chromedp.Navigate(e.url+"/agents"))
	signIn(t, ctx, "alice")
	browsertest.WaitPath(t, ctx, "/agents")
	browsertest.Do(t, ctx, "the agents page", chromedp.WaitVisible(chromedp.CSS("#agent-"+id)))
	if s := browsertest.Text(t, ctx, "#approval-"+apID); !strings.Contains(s, "Budget helper") || !strings.Contains(s, binding) || !strings.Contains(s, "transfer") {
		t.Errorf("the CIBA entry reads %q", s)
	}
	card := browsertest.Text(t, ctx, "#agent-"+id)
	for _, s := range []string{"alice-laptop", "delegated", "check_balance", `one of "acc_1", "acc_2"`, "echo"} {
		if !strings.Contains(card, s) {
			t.Errorf("the agent card %q lacks %q", card, s)
		}
	}
	browsertest.Screenshot(t, ctx, "agents-page.png")

	browsertest.Do(t, ctx, "reviewing the CIBA request",
		chromedp.Click(chromedp.CSS("#review-"+apID)),
		chromedp.WaitVisible(chromedp.CSS("#allow")))
	if s := browsertest.Text(t, ctx, "#binding"); s != binding {
		t.Errorf("the review shows binding message %q, want %q", s, binding)
	}
	browsertest.Screenshot(t, ctx, "ciba-review.png")
	browsertest.Do(t, ctx, "allowing with the code of the message",
		chromedp.Click(chromedp.CSS("#allow")),
		chromedp.WaitVisible(chromedp.CSS("#presence")),
		chromedp.SendKeys(chromedp.CSS("#presence"), code),
		chromedp.Click(chromedp.CSS("#confirm")),
		chromedp.WaitVisible(chromedp.CSS("#outcome")))
	if s := browsertest.Text(t, ctx, "#outcome"); s != "You allowed Budget helper: transfer." {
		t.Errorf("outcome %q", s)
	}

	browsertest.Do(t, ctx, "back to Your agents",
		chromedp.Navigate(e.url+"/agents"),
		chromedp.WaitVisible(chromedp.CSS("#nothing-waiting")))
	if s := browsertest.Text(t, ctx, "#grant-"+id+"-transfer"); !strings.Contains(s, "active") {
		t.Errorf("the transfer grant reads %q", s)
	}
	browsertest.Do(t, ctx, "revoking the echo grant",
		chromedp.Click(chromedp.CSS("#grant-"+id+"-echo button.revoke-grant")),
		chromedp.WaitVisible(chromedp.CSS("#notice")))
	if s := browsertest.Text(t, ctx, "#notice"); s != "The capability was revoked." {
		t.Errorf("notice %q", s)
	}
	if s := browsertest.Text(t, ctx, "#grant-"+id+"-echo"); !strings.Contains(s, "denied") {
		t.Errorf("the echo grant reads %q", s)
	}
	browsertest.Screenshot(t, ctx, "agents-revoked.png")
	x := e.do(http.MethodPost, "/capability/execute", e.agentToken(a, id, e.url+"/capability/execute", nil),
		map[string]any{"capability": "echo", "arguments": map[string]any{"message": "x"}})
	if x.status != http.StatusForbidden || x.code() != agentcap.CodeCapabilityNotGranted {
		t.Errorf("execute the revoked grant: %d %s", x.status, x.raw)
	}
}

// TestActivityPageInChromium walks "Activity" in headless Chromium: alice
// approves an agent on the approval page, the agent calls a capability,
// she revokes one of its grants on "Your agents", and the Activity page,
// reached through the navigation, lists all of it, newest first.
func TestActivityPageInChromium(t *testing.T) {
	ctx := browsertest.New(t)
	e := newPageEnv(t, func(c *provider.Config) { c.Audit = audit.NewMemory(nil) })
	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "Budget helper", "host_name": "alice-laptop", "capabilities": []any{"echo", "check_balance"}})
	if r.status != http.StatusOK {
		t.Fatalf("register: %d %s", r.status, r.raw)
	}
	id := r.str("agent_id")

	browsertest.Do(t, ctx, "opening the verification URI", chromedp.Navigate(r.body["approval"].(map[string]any)["verification_uri_complete"].(string)))
	signIn(t, ctx, "alice")
	browsertest.Do(t, ctx, "allowing the agent",
		chromedp.WaitVisible(chromedp.CSS("#allow")),
		chromedp.Click(chromedp.CSS("#allow")),
		chromedp.WaitVisible(chromedp.CSS("#outcome")))

	x := e.do(http.MethodPost, "/capability/execute", e.agentToken(a, id, e.url+"/capability/execute", nil),
		map[string]any{"capability": "echo", "arguments": map[string]any{"message": "hello"}})
	if x.status != http.StatusOK {
		t.Fatalf("execute: %d %s", x.status, x.raw)
	}
	// The executor stamps records with the real clock, the provider with
	// the test clock, which started at the last whole second: a minute
	// on, the revocation comes after the call, as it does in real time.
	e.clock.Advance(time.Minute)

	browsertest.Do(t, ctx, "revoking the echo grant on Your agents",
		chromedp.Navigate(e.url+"/agents"),
		chromedp.WaitVisible(chromedp.CSS("#grant-"+id+"-echo button.revoke-grant")),
		chromedp.Click(chromedp.CSS("#grant-"+id+"-echo button.revoke-grant")),
		chromedp.WaitVisible(chromedp.CSS("#notice")))
	nav := browsertest.Value(t, ctx, "reading the navigation", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#nav a"), a => a.textContent)`))
	if !slices.Equal(nav, []string{"Approve an agent", "Your agents", "Activity"}) {
		t.Errorf("navigation %q", nav)
	}
	browsertest.Do(t, ctx, "opening Activity from the navigation",
		chromedp.Click(chromedp.CSS(`#nav a[href="/activity"]`)),
		chromedp.WaitVisible(chromedp.CSS("#activity")))
	browsertest.WaitPath(t, ctx, "/activity")
	rows := browsertest.Value(t, ctx, "reading the records", chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("#activity tr.record"), tr => tr.dataset.event + " | " + tr.textContent.replace(/\s+/g, " ").trim())`))
	want := []struct{ event, text string }{
		{audit.EventGrantsChanged, "revoked by the user"},
		{"echo", "Call echo Budget helper ok"},
		{audit.EventApprovalApproved, "registration approved: echo, check_balance"},
	}
	if len(rows) < len(want) {
		t.Fatalf("records %q", rows)
	}
	for i, w := range want {
		if !strings.HasPrefix(rows[i], w.event+" |") || !strings.Contains(rows[i], w.text) {
			t.Errorf("record %d reads %q, want event %s with %q", i, rows[i], w.event, w.text)
		}
	}
	if !strings.Contains(rows[1], "from 127.0.0.1") || !strings.Contains(rows[1], "request ") {
		t.Errorf("the call's record lacks its request: %q", rows[1])
	}
	if s := browsertest.Text(t, ctx, "#user"); s != "Alice" {
		t.Errorf("signed in as %q", s)
	}
	browsertest.Screenshot(t, ctx, "activity-page.png")
}

// TestConfirmationPageInChromium walks a person's confirmation of one
// call in headless Chromium: an agent's big payment waits for alice; she
// opens the link it shows, sees the agent, the capability and the
// preview, confirms with the extra step the webauthn-strength capability
// asks for, and the agent gets the token that runs the call.
func TestConfirmationPageInChromium(t *testing.T) {
	ctx := browsertest.New(t)
	e := newConfirmPageEnv(t)
	a, agentID := e.payer("alice")
	r := e.pay(a, agentID, 500, "")
	if r.status != http.StatusAccepted {
		t.Fatalf("big payment: %d %s", r.status, r.raw)
	}
	ap := r.body["approval"].(map[string]any)
	code := ap["user_code"].(string)

	browsertest.Do(t, ctx, "opening the verification URI", chromedp.Navigate(ap["verification_uri_complete"].(string)))
	signIn(t, ctx, "alice")
	browsertest.Do(t, ctx, "the confirmation page", chromedp.WaitVisible(chromedp.CSS("#preview")))
	want := map[string]string{"h1": "Confirm this call?", "#agent-name": "payer", "#host-name": "laptop",
		"#call-capability": "pay", "#user-code": code}
	for sel, v := range want {
		if got := browsertest.Text(t, ctx, sel); got != v {
			t.Errorf("%s = %q, want %q", sel, got, v)
		}
	}
	rows := browsertest.Value(t, ctx, "reading the preview", chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("#preview tr"), tr => tr.cells[0].textContent + ": " + tr.cells[1].textContent)`))
	if !slices.Equal(rows, []string{"To: bob", "Amount: 500", "Balance after: 500"}) {
		t.Errorf("preview rows %q", rows)
	}
	if s := browsertest.Text(t, ctx, "#call"); !strings.Contains(s, "high risk") || !strings.Contains(s, "Pay someone from your account.") {
		t.Errorf("the call reads %q", s)
	}
	browsertest.Screenshot(t, ctx, "confirmation-page.png")

	browsertest.Do(t, ctx, "confirming",
		chromedp.Click(chromedp.CSS("#allow")),
		chromedp.WaitVisible(chromedp.CSS("#presence")))
	if s := browsertest.Text(t, ctx, "#strong"); s != "pay" {
		t.Errorf("to confirm in person: %q", s)
	}
	browsertest.Do(t, ctx, "the extra step",
		chromedp.SendKeys(chromedp.CSS("#presence"), code),
		chromedp.Click(chromedp.CSS("#confirm")),
		chromedp.WaitVisible(chromedp.CSS("#outcome")))
	if s := browsertest.Text(t, ctx, "#outcome"); s != "You confirmed the call of pay by payer." {
		t.Errorf("outcome %q", s)
	}
	browsertest.Screenshot(t, ctx, "confirmation-done.png")

	e.clock.Advance(2 * time.Second)
	p := e.pollConfirmation(a, agentID, r.str("status_url"), e.url)
	token, _ := p.body["confirmation"].(map[string]any)["token"].(string)
	if p.status != http.StatusOK || token == "" {
		t.Fatalf("poll: %d %s", p.status, p.raw)
	}
	if x := e.pay(a, agentID, 500, token); x.status != http.StatusOK {
		t.Errorf("the confirmed payment: %d %s", x.status, x.raw)
	}
}
