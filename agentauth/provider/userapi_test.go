package provider_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/provider"
)

// headerUser signs users in by a test header, at the time another test
// header names (now when absent).
func headerUser(now func() time.Time) func(r *http.Request) (*provider.User, error) {
	return func(r *http.Request) (*provider.User, error) {
		id := r.Header.Get("X-Test-User")
		if id == "" {
			return nil, nil
		}
		at := now()
		if s := r.Header.Get("X-Test-Signed-In"); s != "" {
			d, _ := time.ParseDuration(s)
			at = at.Add(-d)
		}
		return &provider.User{ID: id, Name: id, AuthenticatedAt: at}, nil
	}
}

// apiUser calls the user API as one user.
type apiUser struct {
	t      *testing.T
	e      *env
	id     string
	csrf   string
	header map[string]string
}

func (e *env) apiUser(t *testing.T, id string) *apiUser {
	u := &apiUser{t: t, e: e, id: id, header: map[string]string{}}
	s := u.do(http.MethodGet, provider.PathUserSession, nil)
	if s.status != http.StatusOK || s.str("user_id") != id || s.body["fresh"] != true || s.str("csrf_header") != provider.CSRFHeader {
		t.Fatalf("session: %d %s", s.status, s.raw)
	}
	u.csrf = s.str("csrf_token")
	return u
}

func (u *apiUser) do(method, path string, body any) response {
	u.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u.e.url+path, rd)
	if err != nil {
		u.t.Fatal(err)
	}
	if u.id != "" {
		req.Header.Set("X-Test-User", u.id)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if u.csrf != "" {
		req.Header.Set(provider.CSRFHeader, u.csrf)
	}
	for k, v := range u.header {
		req.Header.Set(k, v)
	}
	resp, err := u.e.srv.Client().Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	_ = json.Unmarshal(raw, &out.body)
	return out
}

func newUserAPIEnv(t *testing.T, mods ...func(*provider.Config)) *env {
	return newEnv(t, append([]func(*provider.Config){func(c *provider.Config) {
		c.SignedInUser = headerUser(c.Now)
	}}, mods...)...)
}

// connected registers an agent of h with caps and has user approve it.
func (e *env) connected(h, a *key, user string, caps ...any) string {
	e.t.Helper()
	r := e.register(h, a, map[string]any{"name": "assistant", "host_name": "laptop", "capabilities": caps})
	e.approve(r, user, nil)
	return r.str("agent_id")
}

func grantStatuses(r response) map[string]string {
	out := map[string]string{}
	for _, g := range r.body["agent_capability_grants"].([]any) {
		m := g.(map[string]any)
		out[m["capability"].(string)] = m["status"].(string)
	}
	return out
}

// TestUserAPIAuthAndCSRF: every call needs the signed-in user; a call
// that changes something needs the CSRF header token of that user, a
// same-origin browser context and a JSON body.
func TestUserAPIAuthAndCSRF(t *testing.T) {
	e := newUserAPIEnv(t)
	h := newKey(t)
	id := e.connected(h, newKey(t), "alice", "echo")
	anon := &apiUser{t: t, e: e, header: map[string]string{}}
	if r := anon.do(http.MethodGet, provider.PathUserAgents, nil); r.status != http.StatusUnauthorized || r.code() != agentcap.CodeAuthenticationRequired || r.header.Get("WWW-Authenticate") != "" {
		t.Errorf("anonymous: %d %s %q", r.status, r.raw, r.header.Get("WWW-Authenticate"))
	}
	alice := e.apiUser(t, "alice")
	rename := func(u *apiUser) response {
		return u.do(http.MethodPatch, provider.PathUserAgents+"/"+id, map[string]any{"name": "renamed"})
	}
	tests := []struct {
		name   string
		mod    func(u *apiUser)
		status int
		code   agentcap.Code
	}{
		{"no token", func(u *apiUser) { u.csrf = "" }, 403, agentcap.CodeCSRFFailed},
		{"bob's token", func(u *apiUser) { u.csrf = e.apiUser(t, "bob").csrf }, 403, agentcap.CodeCSRFFailed},
		{"forged token", func(u *apiUser) { u.csrf = "1.AAAA" }, 403, agentcap.CodeCSRFFailed},
		{"cross-site fetch", func(u *apiUser) { u.header["Sec-Fetch-Site"] = "cross-site" }, 403, agentcap.CodeCSRFFailed},
		{"another origin", func(u *apiUser) { u.header["Origin"] = "https://evil.example" }, 403, agentcap.CodeCSRFFailed},
		{"form body", func(u *apiUser) { u.header["Content-Type"] = "application/x-www-form-urlencoded" }, 415, "unsupported_media_type"},
		{"same origin", func(u *apiUser) { u.header["Origin"] = e.url; u.header["Sec-Fetch-Site"] = "same-origin" }, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := *alice
			u.header = map[string]string{}
			tt.mod(&u)
			r := rename(&u)
			if r.status != tt.status || (tt.code != "" && r.code() != tt.code) {
				t.Errorf("%d %s, want %d %s", r.status, r.raw, tt.status, tt.code)
			}
		})
	}
	// A token older than an hour is refused.
	e.clock.Advance(61 * time.Minute)
	if r := rename(alice); r.status != 403 || r.code() != agentcap.CodeCSRFFailed {
		t.Errorf("stale token: %d %s", r.status, r.raw)
	}
}

// TestUserAPIAgents covers the agent half of the user API: list, get,
// rename, grant, revoke a grant, revoke the agent, with another user's
// agent invisible; and the effect of each on the agent through the
// protocol.
func TestUserAPIAgents(t *testing.T) {
	e := newUserAPIEnv(t, func(c *provider.Config) {
		c.Policy.GrantTTL = provider.GrantTTLs(map[string]time.Duration{"check_balance": time.Hour})
	})
	h, a := newKey(t), newKey(t)
	id := e.connected(h, a, "alice", "echo")
	bobs := e.connected(newKey(t), newKey(t), "bob", "echo")
	alice := e.apiUser(t, "alice")

	list := alice.do(http.MethodGet, provider.PathUserAgents, nil)
	agents, _ := list.body["agents"].([]any)
	if list.status != 200 || len(agents) != 1 || agents[0].(map[string]any)["agent_id"] != id ||
		agents[0].(map[string]any)["host_name"] != "laptop" || list.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("list: %d %s", list.status, list.raw)
	}
	if r := alice.do(http.MethodGet, provider.PathUserAgents+"?status=revoked", nil); len(r.body["agents"].([]any)) != 0 {
		t.Errorf("status filter: %s", r.raw)
	}
	for _, path := range []string{provider.PathUserAgents + "/" + bobs, provider.PathUserAgents + "/agt_nope"} {
		if r := alice.do(http.MethodGet, path, nil); r.status != 404 || r.code() != agentcap.CodeAgentNotFound {
			t.Errorf("GET %s: %d %s", path, r.status, r.raw)
		}
	}
	if r := alice.do(http.MethodPost, provider.PathUserAgents+"/"+bobs+"/revoke", nil); r.status != 404 {
		t.Errorf("revoking bob's agent: %d %s", r.status, r.raw)
	}

	if r := alice.do(http.MethodPatch, provider.PathUserAgents+"/"+id, map[string]any{"name": "Budget helper"}); r.status != 200 || r.str("name") != "Budget helper" {
		t.Errorf("rename: %d %s", r.status, r.raw)
	}

	grant := alice.do(http.MethodPost, provider.PathUserAgents+"/"+id+"/grants", map[string]any{"capabilities": []any{
		map[string]any{"name": "check_balance", "constraints": map[string]any{"message": map[string]any{"in": []string{"a", "b"}}}}}})
	if grant.status != 200 || grantStatuses(grant)["check_balance"] != "active" {
		t.Fatalf("grant: %d %s", grant.status, grant.raw)
	}
	var g map[string]any
	for _, x := range grant.body["agent_capability_grants"].([]any) {
		if x.(map[string]any)["capability"] == "check_balance" {
			g = x.(map[string]any)
		}
	}
	if g["granted_by"] != "alice" || g["expires_at"] != e.clock.Now().Add(time.Hour).UTC().Format(time.RFC3339) ||
		!cmp.Equal(map[string]any{"message": map[string]any{"in": []any{"a", "b"}}}, g["constraints"]) {
		t.Errorf("granted %v", g)
	}
	exec := func(capability, msg string) response {
		return e.do(http.MethodPost, "/capability/execute", e.agentToken(a, id, e.url+"/capability/execute", nil),
			map[string]any{"capability": capability, "arguments": map[string]any{"message": msg}})
	}
	if x := exec("check_balance", "a"); x.status != 200 {
		t.Errorf("execute the granted capability: %d %s", x.status, x.raw)
	}
	if x := exec("check_balance", "z"); x.status != 403 || x.code() != agentcap.CodeConstraintViolated {
		t.Errorf("outside the granted constraints: %d %s", x.status, x.raw)
	}
	for _, tt := range []struct {
		name   string
		body   any
		header map[string]string
		status int
		code   agentcap.Code
	}{
		{"webauthn without presence", map[string]any{"capabilities": []any{"transfer"}}, nil, 403, agentcap.CodePresenceRequired},
		{"unknown capability", map[string]any{"capabilities": []any{"ghost"}}, nil, 400, agentcap.CodeInvalidCapabilities},
		{"stale sign-in", map[string]any{"capabilities": []any{"echo"}}, map[string]string{"X-Test-Signed-In": "1h"}, 403, agentcap.CodeReauthenticationRequired},
	} {
		u := *alice
		u.header = tt.header
		if r := u.do(http.MethodPost, provider.PathUserAgents+"/"+id+"/grants", tt.body); r.status != tt.status || r.code() != tt.code {
			t.Errorf("grant, %s: %d %s", tt.name, r.status, r.raw)
		}
	}

	rv := alice.do(http.MethodDelete, provider.PathUserAgents+"/"+id+"/grants/echo", nil)
	if rv.status != 200 || grantStatuses(rv)["echo"] != "denied" {
		t.Fatalf("revoke a grant: %d %s", rv.status, rv.raw)
	}
	if x := exec("echo", "x"); x.status != 403 || x.code() != agentcap.CodeCapabilityNotGranted {
		t.Errorf("execute a revoked grant: %d %s", x.status, x.raw)
	}
	if r := alice.do(http.MethodDelete, provider.PathUserAgents+"/"+id+"/grants/echo", nil); r.status != 404 || r.code() != agentcap.CodeGrantNotFound {
		t.Errorf("revoke it again: %d %s", r.status, r.raw)
	}

	if r := alice.do(http.MethodPost, provider.PathUserAgents+"/"+id+"/revoke", nil); r.status != 200 || r.str("status") != "revoked" {
		t.Fatalf("revoke the agent: %d %s", r.status, r.raw)
	}
	if x := exec("check_balance", "a"); x.status != 403 || x.code() != agentcap.CodeAgentRevoked {
		t.Errorf("execute after revocation: %d %s", x.status, x.raw)
	}
	if r := alice.do(http.MethodPost, provider.PathUserAgents+"/"+id+"/grants", map[string]any{"capabilities": []any{"echo"}}); r.status != 409 {
		t.Errorf("grant to a revoked agent: %d %s", r.status, r.raw)
	}
}

// TestUserAPIHosts covers hosts: list, get, update name and default
// capabilities, revoke with the cascade.
func TestUserAPIHosts(t *testing.T) {
	e := newUserAPIEnv(t)
	h := newKey(t)
	id := e.connected(h, newKey(t), "alice", "echo")
	st := e.do(http.MethodGet, provider.PathStatus+"?agent_id="+id, e.hostToken(h, nil), nil)
	hostID := st.str("host_id")
	alice := e.apiUser(t, "alice")
	hosts := alice.do(http.MethodGet, provider.PathUserHosts, nil)
	if list, _ := hosts.body["hosts"].([]any); len(list) != 1 || list[0].(map[string]any)["host_id"] != hostID {
		t.Fatalf("hosts: %s", hosts.raw)
	}
	if r := e.apiUser(t, "bob").do(http.MethodGet, provider.PathUserHosts+"/"+hostID, nil); r.status != 404 || r.code() != agentcap.CodeHostNotFound {
		t.Errorf("bob reads alice's host: %d %s", r.status, r.raw)
	}
	up := alice.do(http.MethodPatch, provider.PathUserHosts+"/"+hostID, map[string]any{"name": "Work laptop", "default_capabilities": []string{"echo", "check_balance"}})
	if up.status != 200 || up.str("name") != "Work laptop" || !cmp.Equal([]any{"check_balance", "echo"}, up.body["default_capabilities"]) {
		t.Fatalf("update: %d %s", up.status, up.raw)
	}
	// The new defaults take effect: a second agent of the host gets both
	// without asking.
	r2 := e.register(h, newKey(t), map[string]any{"name": "second", "capabilities": []any{"echo", "check_balance"}})
	if r2.str("status") != "active" {
		t.Errorf("second agent after the new defaults: %s", r2.raw)
	}
	if r := alice.do(http.MethodPatch, provider.PathUserHosts+"/"+hostID, map[string]any{"default_capabilities": []string{"ghost"}}); r.status != 400 {
		t.Errorf("unknown default: %d %s", r.status, r.raw)
	}
	rv := alice.do(http.MethodPost, provider.PathUserHosts+"/"+hostID+"/revoke", nil)
	if rv.status != 200 || rv.body["agents_revoked"] != float64(2) {
		t.Fatalf("revoke host: %d %s", rv.status, rv.raw)
	}
	if r := e.do(http.MethodGet, provider.PathStatus+"?agent_id="+id, e.hostToken(h, nil), nil); r.status != 403 || r.code() != agentcap.CodeHostRevoked {
		t.Errorf("the revoked host: %d %s", r.status, r.raw)
	}
}

// TestUserAPIApprovals lists the requests waiting for the user and
// decides one, with presence for webauthn-strength capabilities.
func TestUserAPIApprovals(t *testing.T) {
	e := newUserAPIEnv(t)
	h, a := newKey(t), newKey(t)
	id := e.connected(h, a, "alice", "echo")
	rc := e.do(http.MethodPost, provider.PathRequestCapability, e.agentToken(a, id, e.url, nil),
		map[string]any{"capabilities": []any{"check_balance", "transfer"}, "reason": "pay rent"})
	if rc.status != 200 {
		t.Fatalf("request: %d %s", rc.status, rc.raw)
	}
	code := rc.body["approval"].(map[string]any)["user_code"].(string)
	alice := e.apiUser(t, "alice")
	list := alice.do(http.MethodGet, provider.PathUserApprovals, nil)
	aps, _ := list.body["approvals"].([]any)
	if len(aps) != 1 {
		t.Fatalf("approvals: %s", list.raw)
	}
	ap := aps[0].(map[string]any)
	apID := ap["approval_id"].(string)
	if ap["agent_id"] != id || ap["kind"] != "capabilities" || ap["method"] != "device_authorization" || ap["reason"] != "pay rent" ||
		len(ap["capabilities"].([]any)) != 2 || ap["expires_in"] != float64(600) {
		t.Errorf("approval %v", ap)
	}
	if r := e.apiUser(t, "bob").do(http.MethodGet, provider.PathUserApprovals+"/"+apID, nil); r.status != 404 {
		t.Errorf("bob reads alice's request: %d %s", r.status, r.raw)
	}
	decide := func(body map[string]any) response {
		return alice.do(http.MethodPost, provider.PathUserApprovals+"/"+apID, body)
	}
	if r := decide(map[string]any{"decision": "approve"}); r.status != 403 || r.code() != agentcap.CodePresenceRequired {
		t.Errorf("approve transfer without presence: %d %s", r.status, r.raw)
	}
	if r := decide(map[string]any{"decision": "approve", "presence_code": "BCDF-GHJK"}); r.status != 403 {
		t.Errorf("approve with a wrong code: %d %s", r.status, r.raw)
	}
	if r := decide(map[string]any{"decision": "maybe"}); r.status != 400 {
		t.Errorf("bad decision: %d %s", r.status, r.raw)
	}
	if r := decide(map[string]any{"decision": "approve", "presence_code": code}); r.status != 200 || r.str("status") != "approved" {
		t.Fatalf("approve: %d %s", r.status, r.raw)
	}
	if r := decide(map[string]any{"decision": "deny"}); r.status != 410 && r.status != 404 {
		t.Errorf("decide again: %d %s", r.status, r.raw)
	}
	ag := alice.do(http.MethodGet, provider.PathUserAgents+"/"+id, nil)
	if diff := cmp.Diff(map[string]string{"echo": "active", "check_balance": "active", "transfer": "active"}, grantStatuses(ag)); diff != "" {
		t.Errorf("grants after approval (-want +got):\n%s", diff)
	}
}
