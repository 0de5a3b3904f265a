package provider_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/provider"
)

// newSignedIn returns a browser signed in as user at e.
func newSignedIn(t *testing.T, e *env, user string) *browser {
	b := newBrowser(t, e)
	if status := b.signIn(user, "/"); status != http.StatusSeeOther {
		t.Fatalf("sign in as %s: %d", user, status)
	}
	return b
}

var sameSite = map[string]string{"Sec-Fetch-Site": "same-origin"}

// TestAgentsPage covers the "Your agents" page: what it shows (waiting
// requests, agents with grants and constraints, hosts), its revocations
// through forms protected like the approval page's, and the shared
// layout and headers.
func TestAgentsPage(t *testing.T) {
	e := newPageEnv(t)
	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "<i>Budget</i> helper", "host_name": "laptop", "capabilities": []any{
		"echo", map[string]any{"name": "check_balance", "constraints": map[string]any{"message": map[string]any{"in": []string{"acc_1"}}}}}})
	e.approve(r, "alice", nil)
	id := r.str("agent_id")
	rc := e.do(http.MethodPost, provider.PathRequestCapability, e.agentToken(a, id, e.url, nil),
		map[string]any{"capabilities": []any{"transfer"}, "binding_message": "rent for May"})
	if rc.status != 200 {
		t.Fatalf("request: %d %s", rc.status, rc.raw)
	}

	anon := newBrowser(t, e)
	if status, _, hdr := anon.get("/agents"); status != http.StatusSeeOther || hdr.Get("Location") != "/login?next=%2Fagents" {
		t.Errorf("anonymous: %d %q", status, hdr.Get("Location"))
	}

	alice := newSignedIn(t, e, "alice")
	status, page, hdr := alice.get("/agents")
	if status != 200 {
		t.Fatalf("agents page: %d %s", status, page)
	}
	for _, want := range []string{
		"&lt;i&gt;Budget&lt;/i&gt; helper", "laptop", "check_balance", "one of &#34;acc_1&#34;", "echo",
		"rent for May", `href="/approve?request=`, `aria-current="page"`, ">Your agents<", ">Approve an agent<",
		`value="revoke_grant"`, `value="revoke_agent"`, `value="revoke_host"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "<i>Budget") {
		t.Error("an agent's name reached the page unescaped")
	}
	_, approvePage, approveHdr := alice.get("/approve")
	for _, name := range []string{"Content-Security-Policy", "X-Frame-Options", "Referrer-Policy", "Cache-Control", "X-Content-Type-Options"} {
		if hdr.Get(name) == "" || hdr.Get(name) != approveHdr.Get(name) {
			t.Errorf("%s: agents page %q, approval page %q", name, hdr.Get(name), approveHdr.Get(name))
		}
	}
	if !strings.Contains(approvePage, `<nav id="nav">`) || !strings.Contains(approvePage, `href="/agents"`) {
		t.Error("the approval page lacks the shared navigation")
	}

	// Bob sees none of it.
	_, bobPage, _ := newSignedIn(t, e, "bob").get("/agents")
	if strings.Contains(bobPage, "Budget") || !strings.Contains(bobPage, `id="no-agents"`) {
		t.Error("bob's page shows alice's agent")
	}

	token := csrfField.FindStringSubmatch(page)[1]
	revokeGrant := url.Values{"csrf": {token}, "action": {"revoke_grant"}, "agent_id": {id}, "capability": {"echo"}}
	for _, tt := range []struct {
		name   string
		form   url.Values
		header map[string]string
	}{
		{"no token", url.Values{"action": {"revoke_grant"}, "agent_id": {id}, "capability": {"echo"}}, sameSite},
		{"cross-site", revokeGrant, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"another origin", revokeGrant, map[string]string{"Origin": "https://evil.example"}},
	} {
		if status, _ := alice.post("/agents", tt.form, tt.header); status != http.StatusForbidden {
			t.Errorf("%s: %d", tt.name, status)
		}
	}
	bob := newSignedIn(t, e, "bob")
	if status, _ := bob.post("/agents", revokeGrant, sameSite); status != http.StatusForbidden {
		t.Errorf("bob with alice's token: %d", status)
	}
	status, _, hdr = func() (int, string, http.Header) {
		req, _ := http.NewRequest(http.MethodPost, e.url+"/agents", strings.NewReader(revokeGrant.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", e.url)
		resp, err := alice.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, "", resp.Header
	}()
	if status != http.StatusSeeOther || hdr.Get("Location") != "/agents?done=grant-revoked" {
		t.Fatalf("revoke a grant: %d %q", status, hdr.Get("Location"))
	}
	if _, page, _ := alice.get("/agents?done=grant-revoked"); !strings.Contains(page, "The capability was revoked.") {
		t.Error("no notice after the revocation")
	}
	exec := func(name, msg string) response {
		return e.do(http.MethodPost, "/capability/execute", e.agentToken(a, id, e.url+"/capability/execute", nil),
			map[string]any{"capability": name, "arguments": map[string]any{"message": msg}})
	}
	if x := exec("echo", "x"); x.status != 403 || x.code() != agentcap.CodeCapabilityNotGranted {
		t.Errorf("execute the revoked grant: %d %s", x.status, x.raw)
	}
	if x := exec("check_balance", "acc_1"); x.status != 200 {
		t.Errorf("the other grant: %d %s", x.status, x.raw)
	}
	if status, _ := alice.post("/agents", revokeGrant, sameSite); status != http.StatusConflict {
		t.Errorf("revoking it twice: %d", status)
	}
	if status, _ := alice.post("/agents", url.Values{"csrf": {token}, "action": {"revoke_agent"}, "agent_id": {id}}, sameSite); status != http.StatusSeeOther {
		t.Errorf("revoke the agent: %d", status)
	}
	if x := exec("check_balance", "acc_1"); x.status != 403 || x.code() != agentcap.CodeAgentRevoked {
		t.Errorf("execute after revoking the agent: %d %s", x.status, x.raw)
	}
}

// TestApprovalPageByRequest: a request on the user's list opens on the
// approval page by its id, for its user only, and is decided there.
func TestApprovalPageByRequest(t *testing.T) {
	e := newPageEnv(t)
	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "assistant", "capabilities": []any{"echo"}})
	e.approve(r, "alice", nil)
	rc := e.do(http.MethodPost, provider.PathRequestCapability, e.agentToken(a, r.str("agent_id"), e.url, nil),
		map[string]any{"capabilities": []any{"check_balance"}})
	if rc.status != 200 {
		t.Fatal(rc.raw)
	}
	aps, err := e.p.UserApprovals(context.Background(), "alice")
	if err != nil || len(aps) != 1 {
		t.Fatal(aps, err)
	}
	path := "/approve?request=" + aps[0].ID
	if status, page, _ := newSignedIn(t, e, "bob").get(path); status != http.StatusNotFound {
		t.Errorf("bob opens alice's request: %d %s", status, page)
	}
	alice := newSignedIn(t, e, "alice")
	status, page, _ := alice.get(path)
	if status != 200 || !strings.Contains(page, `name="request" value="`+aps[0].ID+`"`) || strings.Contains(page, `id="user-code"`) {
		t.Fatalf("review by request: %d %s", status, page)
	}
	form := url.Values{"csrf": {csrfField.FindStringSubmatch(page)[1]}, "request": {aps[0].ID}, "step": {"review"},
		"action": {"allow"}, "capability": {"check_balance"}}
	if status, body := alice.post("/approve", form, sameSite); status != 200 || !strings.Contains(body, "You allowed") {
		t.Fatalf("allow: %d %s", status, body)
	}
	if g := grants(e.do(http.MethodGet, provider.PathStatus+"?agent_id="+r.str("agent_id"), e.hostToken(h, nil), nil)); g["check_balance"] != "active" {
		t.Errorf("grants %v", g)
	}
}
