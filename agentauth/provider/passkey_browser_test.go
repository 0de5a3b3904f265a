package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/internal/browsertest"
)

// onHostName serves the provider on localhost rather than 127.0.0.1, as
// passkeys need a host name, with the built-in presence step only.
func onHostName(c *provider.Config) {
	c.Issuer = strings.Replace(c.Issuer, "http://127.0.0.1:", "http://localhost:", 1)
	c.DevPresenceCode = false
}

// newPasskeyEnv is the confirmation environment (the webauthn-strength
// pay and echo) with the development sign-in, on a host name.
func newPasskeyEnv(t *testing.T) *env {
	wrap, signIn := devLoginSite()
	return newConfirmEnvWrapped(t, wrap, signIn, onHostName)
}

// answerJS answers the page's presence request with the browser's
// authenticator, after edit (JavaScript over the request options o) has
// run, and keeps the answer in window.presenceAnswer; with submit, it
// posts the page's form with it.
func answerJS(edit string, submit bool) string {
	return fmt.Sprintf(`(async () => {
  const o = JSON.parse(document.getElementById("passkey").dataset.options).publicKey;
  %s;
  try {
    const c = await navigator.credentials.get({publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(o)});
    window.presenceAnswer = JSON.stringify(c.toJSON());
  } catch (e) {
    window.presenceAnswer = "failed: " + e.name;
    return;
  }
  if (%t) {
    document.getElementById("passkey-credential").value = window.presenceAnswer;
    document.getElementById("presence-form").submit();
  }
})(); true`, edit, submit)
}

// kept waits for the answer answerJS keeps.
func kept(t *testing.T, ctx context.Context) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		a := browsertest.Value(t, ctx, "reading the answer", chromedp.Evaluate[string](`window.presenceAnswer || ""`))
		if a != "" {
			if strings.HasPrefix(a, "failed") {
				t.Fatalf("the authenticator did not answer: %s", a)
			}
			return a
		}
		if time.Now().After(deadline) {
			t.Fatal("no answer from the authenticator")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// submitJS posts the page's presence form with answer.
func submitJS(answer string) string {
	return fmt.Sprintf(`document.getElementById("passkey-credential").value = %q; document.getElementById("presence-form").submit(); true`, answer)
}

// refused waits for the page to refuse a presence answer and returns its
// notice.
func refused(t *testing.T, ctx context.Context, what string) string {
	t.Helper()
	browsertest.Do(t, ctx, what, chromedp.WaitVisible(chromedp.CSS("#notice")), chromedp.WaitVisible(chromedp.CSS("#passkey")))
	return browsertest.Text(t, ctx, "#notice")
}

// evaluate runs JavaScript on the page.
func evaluate(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	browsertest.Value(t, ctx, what, chromedp.Evaluate[bool](js))
}

// toConfirmStep opens an approval request's link and allows everything
// it asks for, up to the confirming step.
func toConfirmStep(t *testing.T, ctx context.Context, r response) {
	t.Helper()
	browsertest.Do(t, ctx, "opening the request",
		chromedp.Navigate(r.body["approval"].(map[string]any)["verification_uri_complete"].(string)),
		chromedp.WaitVisible(chromedp.CSS("#allow")),
		chromedp.Click(chromedp.CSS("#allow")),
		chromedp.WaitVisible(chromedp.CSS("#passkey")))
}

// TestPasskeyApprovalInChromium approves a webauthn-strength capability
// with a passkey in headless Chromium, whose DevTools virtual
// authenticator (CTAP2, internal transport, resident keys, user
// verification) stands in for the person's device, and tries each way
// around it: the development code where it is off, an answer without
// user verification, an expired challenge, an answer made for another
// request, an answer used twice, another user's passkey, and a removed
// passkey. Every refusal leaves the request pending.
func TestPasskeyApprovalInChromium(t *testing.T) {
	ctx := browsertest.New(t)
	e := newPasskeyEnv(t)
	auth := browsertest.Authenticator(t, ctx)
	register := func(name string) response {
		r := e.register(newKey(t), newKey(t), map[string]any{"name": name, "host_name": "laptop", "capabilities": []any{"pay", "echo"}})
		if r.status != http.StatusOK {
			t.Fatalf("register %s: %d %s", name, r.status, r.raw)
		}
		return r
	}
	first, second, third := register("payer"), register("second payer"), register("third payer")

	browsertest.Do(t, ctx, "opening the first request", chromedp.Navigate(first.body["approval"].(map[string]any)["verification_uri_complete"].(string)))
	signIn(t, ctx, "alice")
	browsertest.Do(t, ctx, "allowing it", chromedp.WaitVisible(chromedp.CSS("#allow")), chromedp.Click(chromedp.CSS("#allow")),
		chromedp.WaitVisible(chromedp.CSS("#passkey-new")))
	if s := browsertest.Text(t, ctx, "#decided"); !strings.Contains(s, "pay needs you in person") || !strings.Contains(s, "echo") {
		t.Errorf("the confirming step says %q", s)
	}
	if s := browsertest.Text(t, ctx, "#confirm-agent"); s != "payer" {
		t.Errorf("the confirming step names agent %q", s)
	}
	if browsertest.Value(t, ctx, "looking for the code field", chromedp.Evaluate[bool](`!!document.getElementById("presence")`)) {
		t.Error("the development code field is shown although it is off")
	}
	browsertest.Screenshot(t, ctx, "passkey-first-use.png")

	// The retype-the-code step is refused unless the application turns
	// it on.
	code := first.body["approval"].(map[string]any)["user_code"].(string)
	evaluate(t, ctx, "posting the code", fmt.Sprintf(`const f = document.getElementById("presence-form");
f.insertAdjacentHTML("beforeend", '<input name="presence_code" value="%s">'); f.submit(); true`, code))
	if s := refused(t, ctx, "the code refused"); !strings.Contains(s, "development option") {
		t.Errorf("the code was refused with %q", s)
	}
	browsertest.Screenshot(t, ctx, "presence-code-refused.png")

	// Alice adds her first passkey on the spot.
	browsertest.Do(t, ctx, "adding a passkey",
		chromedp.SendKeys(chromedp.CSS("#passkey-name"), "laptop"),
		chromedp.Click(chromedp.CSS("#create-passkey")),
		chromedp.WaitVisible(chromedp.CSS("#use-passkey")))
	keys, err := e.st.ListPasskeys(context.Background(), "alice")
	if err != nil || len(keys) != 1 || keys[0].Name != "laptop" || keys[0].LastUsedAt != nil {
		t.Fatalf("alice's passkeys: %+v, %v", keys, err)
	}
	browsertest.Screenshot(t, ctx, "passkey-added.png")

	// An answer without user verification is refused.
	browsertest.SetUserVerified(t, ctx, auth, false)
	evaluate(t, ctx, "answering unverified", answerJS(`o.userVerification = "discouraged"`, true))
	if s := refused(t, ctx, "the unverified answer refused"); !strings.Contains(s, "did not match") {
		t.Errorf("the unverified answer was refused with %q", s)
	}
	browsertest.SetUserVerified(t, ctx, auth, true)

	// An answer posted after its challenge expired is refused.
	evaluate(t, ctx, "answering", answerJS("", false))
	late := kept(t, ctx)
	e.clock.Advance(6 * time.Minute)
	evaluate(t, ctx, "posting the late answer", submitJS(late))
	if s := refused(t, ctx, "the late answer refused"); !strings.Contains(s, "expired") {
		t.Errorf("the late answer was refused with %q", s)
	}

	// An answer made for the first request does not allow the second.
	evaluate(t, ctx, "answering the first request", answerJS("", false))
	forFirst := kept(t, ctx)
	toConfirmStep(t, ctx, second)
	evaluate(t, ctx, "posting it on the second", submitJS(forFirst))
	if s := refused(t, ctx, "the answer for another request refused"); !strings.Contains(s, "did not match") {
		t.Errorf("the answer for another request was refused with %q", s)
	}
	browsertest.Screenshot(t, ctx, "passkey-refused.png")

	// Now the real thing, on the first request.
	toConfirmStep(t, ctx, first)
	browsertest.Screenshot(t, ctx, "passkey-confirm.png")
	if s := browsertest.Outcome(t, ctx, "allowing with the passkey", "#use-passkey"); s != "You allowed payer: pay, echo." {
		t.Errorf("outcome %q", s)
	}
	e.clock.Advance(2 * time.Second)
	agentID := first.str("agent_id")
	if a, err := e.st.GetAgent(context.Background(), agentID); err != nil || a.Status != "active" {
		t.Fatalf("the agent after approval: %+v, %v", a, err)
	}
	if keys, _ := e.st.ListPasskeys(context.Background(), "alice"); len(keys) != 1 || keys[0].LastUsedAt == nil {
		t.Errorf("the passkey's use was not recorded: %+v", keys)
	}
	for _, r := range []response{second, third} {
		wantPending(t, e, r)
	}

	// Through the user API, one answer grants once: used again, it is
	// refused even for the very same grant.
	browsertest.Do(t, ctx, "revoking pay on Your agents",
		chromedp.Navigate(e.url+"/agents"),
		chromedp.WaitVisible(chromedp.CSS("#grant-"+agentID+"-pay button.revoke-grant")),
		chromedp.Click(chromedp.CSS("#grant-"+agentID+"-pay button.revoke-grant")),
		chromedp.WaitVisible(chromedp.CSS("#notice")))
	evaluate(t, ctx, "granting twice with one answer", fmt.Sprintf(`(async () => {
  const box = document.getElementById("passkey");
  const post = (path, body) => fetch(box.dataset.api + path, {method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json", "X-CSRF-Token": box.dataset.csrf}, body: JSON.stringify(body)})
    .then(async r => r.status + " " + ((await r.json().catch(() => ({}))).message || ""));
  const res = await fetch(box.dataset.api + "/agents/%[1]s/grants/presence", {method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json", "X-CSRF-Token": box.dataset.csrf}, body: JSON.stringify({capabilities: ["pay"]})});
  const req = await res.json();
  const c = await navigator.credentials.get({publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(req.options.publicKey)});
  const body = {capabilities: ["pay"], presence: {token: req.token, credential: c.toJSON()}};
  const once = await post("/agents/%[1]s/grants", body);
  const twice = await post("/agents/%[1]s/grants", body);
  window.presenceAnswer = once + " | " + twice;
})(); true`, agentID))
	if got := kept(t, ctx); !strings.HasPrefix(got, "200 ") || !strings.Contains(got, "| 403 This passkey answer was already used.") {
		t.Errorf("granting twice with one answer: %q", got)
	}

	// Bob adds a passkey of his own, on the same authenticator.
	browsertest.Do(t, ctx, "signing in as bob", chromedp.Navigate(e.url+"/login?next=/agents"), chromedp.Click(chromedp.CSS("#login-bob")))
	browsertest.WaitPath(t, ctx, "/agents")
	browsertest.Do(t, ctx, "bob adds a passkey",
		chromedp.WaitVisible(chromedp.CSS("#create-passkey")),
		chromedp.SendKeys(chromedp.CSS("#passkey-name"), "bob's phone"),
		chromedp.Click(chromedp.CSS("#create-passkey")),
		chromedp.WaitVisible(chromedp.CSS("#notice")))
	bobKeys, err := e.st.ListPasskeys(context.Background(), "bob")
	if err != nil || len(bobKeys) != 1 {
		t.Fatalf("bob's passkeys: %+v, %v", bobKeys, err)
	}
	if n := len(browsertest.Credentials(t, ctx, auth)); n != 2 {
		t.Fatalf("the authenticator holds %d credentials, want alice's and bob's", n)
	}

	// Alice, on the third request, answered by bob's passkey: refused.
	browsertest.Do(t, ctx, "signing in as alice", chromedp.Navigate(e.url+"/login?next=/agents"), chromedp.Click(chromedp.CSS("#login-alice")))
	browsertest.WaitPath(t, ctx, "/agents")
	toConfirmStep(t, ctx, third)
	evaluate(t, ctx, "answering with bob's passkey", answerJS(fmt.Sprintf(`o.allowCredentials = [{type: "public-key", id: %q}]`, bobKeys[0].ID), true))
	if s := refused(t, ctx, "bob's passkey refused"); !strings.Contains(s, "did not match") {
		t.Errorf("bob's passkey was refused with %q", s)
	}

	// Alice removes her passkey: it no longer confirms anything.
	aliceKey := keys[0].ID
	browsertest.Do(t, ctx, "removing alice's passkey",
		chromedp.Navigate(e.url+"/agents"),
		chromedp.WaitVisible(chromedp.CSS("#passkey-"+aliceKey+" button.remove-passkey")),
		chromedp.Click(chromedp.CSS("#passkey-"+aliceKey+" button.remove-passkey")),
		chromedp.WaitVisible(chromedp.CSS("#no-passkeys")))
	toConfirmStep(t, ctx, third)
	evaluate(t, ctx, "answering with the removed passkey", answerJS(fmt.Sprintf(`o.allowCredentials = [{type: "public-key", id: %q}]`, aliceKey), true))
	if s := refused(t, ctx, "the removed passkey refused"); !strings.Contains(s, "no passkey yet") {
		t.Errorf("the removed passkey was refused with %q", s)
	}
	wantPending(t, e, third)
}

// wantPending checks that the agent's registration r still waits for
// approval.
func wantPending(t *testing.T, e *env, r response) {
	t.Helper()
	aps, err := e.st.ListApprovals(context.Background(), r.str("agent_id"))
	if err != nil || len(aps) != 1 || aps[0].Status != "pending" {
		t.Errorf("the request of %s after refusals: %+v, %v", r.str("agent_id"), aps, err)
	}
}

// TestPasskeyConfirmationInChromium adds and renames a passkey on "Your
// agents", then confirms one call with it: the confirming step shows the
// call's preview beside the passkey prompt, and the agent's call then
// runs.
func TestPasskeyConfirmationInChromium(t *testing.T) {
	ctx := browsertest.New(t)
	e := newPasskeyEnv(t)
	browsertest.Authenticator(t, ctx)
	a, agentID := e.payer("alice")
	r := e.pay(a, agentID, 500, "")
	if r.status != http.StatusAccepted {
		t.Fatalf("big payment: %d %s", r.status, r.raw)
	}

	// Alice adds a passkey on Your agents first.
	browsertest.Do(t, ctx, "opening Your agents", chromedp.Navigate(e.url+"/agents"))
	signIn(t, ctx, "alice")
	browsertest.WaitPath(t, ctx, "/agents")
	browsertest.Do(t, ctx, "adding a passkey",
		chromedp.WaitVisible(chromedp.CSS("#create-passkey")),
		chromedp.SendKeys(chromedp.CSS("#passkey-name"), "laptop"),
		chromedp.Click(chromedp.CSS("#create-passkey")),
		chromedp.WaitVisible(chromedp.CSS(".passkey")))
	if s := browsertest.Text(t, ctx, "#notice"); !strings.HasPrefix(s, "The passkey was added.") {
		t.Errorf("notice %q", s)
	}
	if s := browsertest.Text(t, ctx, ".passkey-name"); s != "laptop" {
		t.Errorf("the passkey is listed as %q", s)
	}
	browsertest.Do(t, ctx, "renaming it",
		chromedp.SendKeys(chromedp.CSS(`.passkey input[name="name"]`), "work laptop"),
		chromedp.Click(chromedp.CSS(".passkey button.rename-passkey")))
	for deadline := time.Now().Add(15 * time.Second); ; {
		q := browsertest.Value(t, ctx, "reading the location", chromedp.Evaluate[string](`document.readyState === "complete" ? location.search : ""`))
		if q == "?done=passkey-renamed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page did not come back renamed: %q", q)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s := browsertest.Text(t, ctx, ".passkey-name"); s != "work laptop" {
		t.Errorf("the renamed passkey is listed as %q", s)
	}
	browsertest.Screenshot(t, ctx, "passkeys-listed.png")

	browsertest.Do(t, ctx, "opening the call to confirm",
		chromedp.Navigate(r.body["approval"].(map[string]any)["verification_uri_complete"].(string)),
		chromedp.WaitVisible(chromedp.CSS("#allow")),
		chromedp.Click(chromedp.CSS("#allow")),
		chromedp.WaitVisible(chromedp.CSS("#use-passkey")))
	rows := browsertest.Value(t, ctx, "reading the preview", chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("#confirm-preview tr"), tr => tr.cells[0].textContent + ": " + tr.cells[1].textContent)`))
	if !slices.Equal(rows, []string{"To: bob", "Amount: 500", "Balance after: 500"}) {
		t.Errorf("the preview beside the passkey prompt: %q", rows)
	}
	browsertest.Screenshot(t, ctx, "passkey-confirm-call.png")
	if s := browsertest.Outcome(t, ctx, "confirming with the passkey", "#use-passkey"); s != "You confirmed the call of pay by payer." {
		t.Errorf("outcome %q", s)
	}

	e.clock.Advance(2 * time.Second)
	p := e.pollConfirmation(a, agentID, r.str("status_url"), e.url)
	var tok struct {
		Confirmation struct {
			Token string `json:"token"`
		} `json:"confirmation"`
	}
	if err := json.Unmarshal(p.raw, &tok); err != nil || tok.Confirmation.Token == "" {
		t.Fatalf("the agent's poll: %d %s", p.status, p.raw)
	}
	if x := e.pay(a, agentID, 500, tok.Confirmation.Token); x.status != http.StatusOK {
		t.Errorf("the confirmed call: %d %s", x.status, x.raw)
	}
}

// TestPasskeyCIBAInChromium decides a CIBA request, addressed to alice
// and opened from "Your agents", with the same passkey step: the agent
// asked for pay by name, with a binding message, and alice allows it
// with her passkey.
func TestPasskeyCIBAInChromium(t *testing.T) {
	ctx := browsertest.New(t)
	box := &inbox{}
	wrap, signInMod := devLoginSite()
	e := newConfirmEnvWrapped(t, wrap, signInMod, onHostName, func(c *provider.Config) { c.Notifier = box })
	browsertest.Authenticator(t, ctx)
	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "assistant", "host_name": "laptop", "capabilities": []any{"echo"}})
	e.approve(r, "alice", nil)
	id := r.str("agent_id")
	rc := e.do(http.MethodPost, provider.PathRequestCapability, e.agentToken(a, id, e.url, nil),
		map[string]any{"capabilities": []any{"pay"}, "preferred_method": "ciba", "binding_message": "Rent for May"})
	if rc.status != http.StatusOK {
		t.Fatalf("CIBA request: %d %s", rc.status, rc.raw)
	}
	sent := box.all(e.p)
	if len(sent) != 1 || sent[0].UserID != "alice" {
		t.Fatalf("notifications %+v", sent)
	}

	browsertest.Do(t, ctx, "opening Your agents", chromedp.Navigate(e.url+"/agents"))
	signIn(t, ctx, "alice")
	browsertest.Do(t, ctx, "reviewing the request",
		chromedp.WaitVisible(chromedp.CSS("#review-"+sent[0].ApprovalID)),
		chromedp.Click(chromedp.CSS("#review-"+sent[0].ApprovalID)),
		chromedp.WaitVisible(chromedp.CSS("#allow")),
		chromedp.Click(chromedp.CSS("#allow")),
		chromedp.WaitVisible(chromedp.CSS("#create-passkey")),
		chromedp.SendKeys(chromedp.CSS("#passkey-name"), "laptop"),
		chromedp.Click(chromedp.CSS("#create-passkey")),
		chromedp.WaitVisible(chromedp.CSS("#use-passkey")))
	if s := browsertest.Outcome(t, ctx, "allowing with the passkey", "#use-passkey"); s != "You allowed assistant: pay." {
		t.Errorf("outcome %q", s)
	}
	e.clock.Advance(2 * time.Second)
	st := e.do(http.MethodGet, provider.PathStatus+"?agent_id="+id, e.hostToken(h, nil), nil)
	if g := grants(st); g["pay"] != "active" {
		t.Errorf("the agent after the CIBA approval: %s", st.raw)
	}
}
