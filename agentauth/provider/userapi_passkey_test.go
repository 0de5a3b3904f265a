package provider_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/store"
)

// storedPasskey stores a passkey for user directly, as a registration
// would have, and returns its id.
func storedPasskey(t *testing.T, e *env, user, name string) string {
	t.Helper()
	id := base64.RawURLEncoding.EncodeToString([]byte(name))
	cred, err := json.Marshal(webauthn.Credential{ID: []byte(name)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.CreatePasskey(context.Background(), &store.Passkey{ID: id, UserID: user, UserHandle: "aGFuZGxl",
		Name: "key " + id, Credential: cred}); err != nil {
		t.Fatal(err)
	}
	return id
}

// publicKey returns the publicKey member of a presence or registration
// answer's options.
func publicKey(t *testing.T, r response) map[string]any {
	t.Helper()
	opts, _ := r.body["options"].(map[string]any)
	pk, _ := opts["publicKey"].(map[string]any)
	if pk == nil {
		t.Fatalf("no options.publicKey in %s", r.raw)
	}
	return pk
}

func TestUserAPIPasskeys(t *testing.T) {
	e := newUserAPIEnv(t, onHostName)
	alice := e.apiUser(t, "alice")

	if r := alice.do(http.MethodGet, "/user/passkeys", nil); r.status != http.StatusOK || string(r.raw) != `{"available":true,"passkeys":[]}`+"\n" {
		t.Fatalf("no passkeys yet: %d %s", r.status, r.raw)
	}

	// Adding one needs a fresh sign-in.
	alice.header["X-Test-Signed-In"] = "1h"
	if r := alice.do(http.MethodPost, "/user/passkeys/options", map[string]any{}); r.status != http.StatusForbidden || r.code() != agentcap.CodeReauthenticationRequired {
		t.Errorf("options after a stale sign-in: %d %s", r.status, r.raw)
	}
	delete(alice.header, "X-Test-Signed-In")
	r := alice.do(http.MethodPost, "/user/passkeys/options", map[string]any{})
	if r.status != http.StatusOK || r.str("token") == "" || r.body["presence"] != nil {
		t.Fatalf("options: %d %s", r.status, r.raw)
	}
	pk := publicKey(t, r)
	sel, _ := pk["authenticatorSelection"].(map[string]any)
	if rp, _ := pk["rp"].(map[string]any); rp["id"] != "localhost" || sel["userVerification"] != "required" || sel["residentKey"] != "required" {
		t.Errorf("creation options: %s", r.raw)
	}
	token := r.str("token")
	for name, body := range map[string]map[string]any{
		"an answer that is no credential": {"token": token, "credential": map[string]any{"id": "x"}},
		"a token of another ceremony":     {"token": strings.Replace(token, ".", "x.", 1), "credential": map[string]any{"id": "x"}},
	} {
		if r := alice.do(http.MethodPost, "/user/passkeys", body); r.status != http.StatusForbidden || r.code() != agentcap.CodePresenceRequired {
			t.Errorf("%s: %d %s", name, r.status, r.raw)
		}
	}
	if r := alice.do(http.MethodPost, "/user/passkeys", map[string]any{"token": token, "credential": "x"}); r.status != http.StatusBadRequest {
		t.Errorf("a credential that is not an object: %d %s", r.status, r.raw)
	}

	// With a passkey, a further one needs it.
	aliceKey, bobKey := storedPasskey(t, e, "alice", "cred_alice"), storedPasskey(t, e, "bob", "cred_bob")
	if r := alice.do(http.MethodPost, "/user/passkeys/options", map[string]any{}); r.status != http.StatusOK || r.body["presence"] == nil {
		t.Errorf("options with a passkey: %d %s", r.status, r.raw)
	}
	r = alice.do(http.MethodGet, "/user/passkeys", nil)
	keys, _ := r.body["passkeys"].([]any)
	if len(keys) != 1 || strings.Contains(string(r.raw), "publicKey") || keys[0].(map[string]any)["id"] != aliceKey {
		t.Errorf("alice's passkeys: %s", r.raw)
	}
	if r := alice.do(http.MethodPatch, "/user/passkeys/"+aliceKey, map[string]any{"name": "phone"}); r.status != http.StatusNoContent {
		t.Errorf("rename: %d %s", r.status, r.raw)
	}
	for _, method := range []string{http.MethodPatch, http.MethodDelete} {
		if r := alice.do(method, "/user/passkeys/"+bobKey, map[string]any{"name": "mine"}); r.status != http.StatusNotFound {
			t.Errorf("%s of bob's passkey by alice: %d %s", method, r.status, r.raw)
		}
	}
	if r := alice.do(http.MethodDelete, "/user/passkeys/"+aliceKey, nil); r.status != http.StatusNoContent {
		t.Errorf("remove: %d %s", r.status, r.raw)
	}
	if ks, _ := e.st.ListPasskeys(context.Background(), "alice"); len(ks) != 0 {
		t.Errorf("after removal: %+v", ks)
	}
}

func TestUserAPIPresence(t *testing.T) {
	e := newUserAPIEnv(t, onHostName)
	alice, bob := e.apiUser(t, "alice"), e.apiUser(t, "bob")
	aliceKey := storedPasskey(t, e, "alice", "cred_alice")
	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "assistant", "host_name": "laptop", "capabilities": []any{"echo", "transfer"}})
	e.approve(r, "alice", []string{"echo"})
	agentID := r.str("agent_id")
	rc := e.do(http.MethodPost, provider.PathRequestCapability, e.agentToken(a, agentID, e.url, nil), map[string]any{"capabilities": []any{"transfer"}})
	if rc.status != http.StatusOK {
		t.Fatalf("request transfer: %d %s", rc.status, rc.raw)
	}
	list := alice.do(http.MethodGet, provider.PathUserApprovals, nil)
	aps, _ := list.body["approvals"].([]any)
	if len(aps) != 1 {
		t.Fatalf("alice's requests: %s", list.raw)
	}
	apID := aps[0].(map[string]any)["approval_id"].(string)
	path := provider.PathUserApprovals + "/" + apID

	p := alice.do(http.MethodPost, path+"/presence", map[string]any{"capabilities": []string{"transfer"}})
	if p.status != http.StatusOK || p.str("token") == "" {
		t.Fatalf("presence request: %d %s", p.status, p.raw)
	}
	pk := publicKey(t, p)
	allow, _ := pk["allowCredentials"].([]any)
	if pk["userVerification"] != "required" || len(allow) != 1 || allow[0].(map[string]any)["id"] != aliceKey {
		t.Errorf("request options: %s", p.raw)
	}
	if r := bob.do(http.MethodPost, path+"/presence", map[string]any{}); r.status != http.StatusNotFound {
		t.Errorf("bob's presence request on alice's request: %d %s", r.status, r.raw)
	}

	decide := func(u *apiUser, body map[string]any) response {
		body["decision"] = "approve"
		body["capabilities"] = []string{"transfer"}
		return u.do(http.MethodPost, path, body)
	}
	// No presence at all, the development code where it is off, bob's
	// token, a forged answer, and an expired token: each is refused and
	// the request stays pending.
	bobToken := bob.do(http.MethodPost, provider.PathUserAgents+"/"+agentID+"/grants/presence", map[string]any{"capabilities": []any{"transfer"}})
	if bobToken.status != http.StatusNotFound {
		t.Errorf("bob's presence request for alice's agent: %d %s", bobToken.status, bobToken.raw)
	}
	answer := map[string]any{"id": aliceKey, "rawId": aliceKey, "type": "public-key",
		"response": map[string]any{"clientDataJSON": "e30", "authenticatorData": "AAAA", "signature": "AAAA"}}
	for name, tc := range map[string]struct {
		body map[string]any
		msg  string
	}{
		"no presence":        {map[string]any{}, "proof that you are present"},
		"the code":           {map[string]any{"presence_code": "BCDF-GHJK"}, "development option"},
		"a forged answer":    {map[string]any{"presence": map[string]any{"token": p.str("token"), "credential": answer}}, "did not match"},
		"a made-up token":    {map[string]any{"presence": map[string]any{"token": "x.1.y", "credential": answer}}, "did not match"},
		"no credential":      {map[string]any{"presence": map[string]any{"token": p.str("token")}}, "presence.credential"},
		"presence not a map": {map[string]any{"presence": "yes"}, "presence must be"},
	} {
		r := decide(alice, tc.body)
		if (r.status != http.StatusForbidden && r.status != http.StatusBadRequest) || !strings.Contains(r.str("message"), tc.msg) {
			t.Errorf("%s: %d %s", name, r.status, r.raw)
		}
	}
	e.clock.Advance(6 * time.Minute)
	if r := decide(alice, map[string]any{"presence": map[string]any{"token": p.str("token"), "credential": answer}}); r.status != http.StatusForbidden || !strings.Contains(r.str("message"), "expired") {
		t.Errorf("an expired token: %d %s", r.status, r.raw)
	}
	if ap, err := e.st.GetApproval(context.Background(), apID); err != nil || ap.Status != "pending" {
		t.Errorf("the request after the refusals: %+v, %v", ap, err)
	}
}

// TestPasskeysNeedAHostName serves the provider on 127.0.0.1, where
// browsers refuse WebAuthn: the user API says passkeys are unavailable,
// and the confirming step says why instead of asking for one.
func TestPasskeysNeedAHostName(t *testing.T) {
	e := newUserAPIEnv(t, func(c *provider.Config) { c.DevPresenceCode = false })
	alice := e.apiUser(t, "alice")
	if r := alice.do(http.MethodGet, "/user/passkeys", nil); r.body["available"] != false {
		t.Errorf("passkeys on an address: %s", r.raw)
	}
	if r := alice.do(http.MethodPost, "/user/passkeys/options", map[string]any{}); r.status != http.StatusForbidden || !strings.Contains(r.str("message"), "not available") {
		t.Errorf("options on an address: %d %s", r.status, r.raw)
	}

	pe := newPageEnv(t, func(c *provider.Config) { c.DevPresenceCode = false })
	reg := pe.register(newKey(t), newKey(t), map[string]any{"name": "payer", "capabilities": []any{"transfer"}})
	code := reg.body["approval"].(map[string]any)["user_code"].(string)
	b := newBrowser(t, pe)
	b.signIn("alice", "/approve")
	_, page, _ := b.get("/approve?code=" + code)
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no review form:\n%s", page)
	}
	status, page := b.post("/approve", url.Values{"csrf": {m[1]}, "code": {code}, "step": {"review"}, "action": {"allow"}, "capability": {"transfer"}}, nil)
	if status != http.StatusOK || !strings.Contains(page, `id="passkey-unavailable"`) || !strings.Contains(page, "host name") || strings.Contains(page, `name="presence_code"`) {
		t.Errorf("the confirming step on an address: %d\n%s", status, page)
	}
}
