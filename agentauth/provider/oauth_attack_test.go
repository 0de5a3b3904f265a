package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/auth"
)

// signedIn is a browser with alice signed in.
func signedIn(t testing.TB, e *oauthEnv) *browser {
	t.Helper()
	b := newBrowser(t, e.env)
	if b.signIn("alice", "/") != http.StatusSeeOther {
		t.Fatal("sign-in failed")
	}
	return b
}

// grant runs a whole consent allowing echo and returns the token answer.
func (e *oauthEnv) grant(t testing.TB, b *browser) map[string]any {
	t.Helper()
	verifier, challenge := pkce("g")
	q := b.consent(e.authorizeURL(challenge, "echo"), []string{"echo"}, nil)
	status, tok := e.redeem(t, q.Get("code"), verifier)
	if status != http.StatusOK {
		t.Fatalf("token: %d %v", status, tok)
	}
	return tok
}

// TestOAuthAuthorizeRefusals covers the requests the authorization
// endpoint refuses: those whose redirect URI cannot be trusted are
// answered there, without a redirect; the others go back to the client
// with an error.
func TestOAuthAuthorizeRefusals(t *testing.T) {
	e := newOAuthEnv(t)
	b := signedIn(t, e)
	_, challenge := pkce("r")
	for _, tc := range []struct {
		name     string
		mod      func(url.Values)
		redirect bool   // the refusal goes back to the client
		want     string // the OAuth error
	}{
		{"unknown client", func(q url.Values) { q.Set("client_id", "nobody") }, false, "invalid_client"},
		{"redirect path differs", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:43210/callbacks") }, false, "invalid_request"},
		{"redirect path prefix", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:43210/callback/more") }, false, "invalid_request"},
		{"redirect host not loopback", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1.evil.example/callback") }, false, "invalid_request"},
		{"redirect other origin", func(q url.Values) { q.Set("redirect_uri", "https://evil.example/callback") }, false, "invalid_request"},
		{"redirect on another loopback address", func(q url.Values) { q.Set("redirect_uri", "http://127.5.0.1:43210/callback") }, false, "invalid_request"},
		{"redirect on the IPv6 loopback", func(q url.Values) { q.Set("redirect_uri", "http://[::1]:43210/callback") }, false, "invalid_request"},
		{"redirect as localhost", func(q url.Values) { q.Set("redirect_uri", "http://localhost:43210/callback") }, false, "invalid_request"},
		{"loopback redirect as https", func(q url.Values) { q.Set("redirect_uri", "https://127.0.0.1:43210/callback") }, false, "invalid_request"},
		{"redirect with an empty query", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:43210/callback?") }, false, "invalid_request"},
		{"redirect with query", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:43210/callback?next=evil") }, false, "invalid_request"},
		{"redirect with fragment", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:43210/callback#x") }, false, "invalid_request"},
		{"redirect with credentials", func(q url.Values) { q.Set("redirect_uri", "http://evil@127.0.0.1:43210/callback") }, false, "invalid_request"},
		{"no redirect", func(q url.Values) { q.Del("redirect_uri") }, false, "invalid_request"},
		{"https redirect on another port", func(q url.Values) {
			q.Set("client_id", "web-app")
			q.Set("redirect_uri", "https://app.example:8443/cb")
		}, false, "invalid_request"},
		{"https redirect with dot segments", func(q url.Values) {
			q.Set("client_id", "web-app")
			q.Set("redirect_uri", "https://app.example/cb/../evil")
		}, false, "invalid_request"},
		{"https redirect as http", func(q url.Values) { q.Set("client_id", "web-app"); q.Set("redirect_uri", "http://app.example/cb") }, false, "invalid_request"},
		{"https redirect on a subdomain", func(q url.Values) {
			q.Set("client_id", "web-app")
			q.Set("redirect_uri", "https://evil.app.example/cb")
		}, false, "invalid_request"},
		{"another client's redirect", func(q url.Values) { q.Set("client_id", "web-app") }, false, "invalid_request"},
		{"no PKCE", func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }, true, "invalid_request"},
		{"PKCE plain", func(q url.Values) { q.Set("code_challenge_method", "plain") }, true, "invalid_request"},
		{"PKCE method missing", func(q url.Values) { q.Del("code_challenge_method") }, true, "invalid_request"},
		{"PKCE challenge malformed", func(q url.Values) { q.Set("code_challenge", "short") }, true, "invalid_request"},
		{"no resource", func(q url.Values) { q.Del("resource") }, true, "invalid_target"},
		{"resource of another server", func(q url.Values) { q.Set("resource", "https://other.example/mcp") }, true, "invalid_target"},
		{"two resources", func(q url.Values) { q.Add("resource", e.resource) }, true, "invalid_target"},
		{"unknown capability", func(q url.Values) { q.Set("scope", "echo steal_everything") }, true, "invalid_scope"},
		{"implicit flow", func(q url.Values) { q.Set("response_type", "token") }, true, "unauthorized_client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body, h := b.get(e.authorizeURL(challenge, "echo", tc.mod))
			loc := h.Get("Location")
			if !tc.redirect {
				if loc != "" || status < 400 || !strings.Contains(body, tc.want) {
					t.Fatalf("got %d Location %q %s, want a %s refusal without a redirect", status, loc, body, tc.want)
				}
				return
			}
			u, _ := url.Parse(loc)
			if status != http.StatusFound || !strings.HasPrefix(loc, "http://127.0.0.1:43210/callback?") || u.Query().Get("error") != tc.want || u.Query().Get("state") != "st-1" {
				t.Fatalf("got %d Location %q, want the client told %s", status, loc, tc.want)
			}
		})
	}
}

// TestOAuthTokenRefusals covers the token endpoint's refusals.
func TestOAuthTokenRefusals(t *testing.T) {
	e := newOAuthEnv(t)
	b := signedIn(t, e)
	verifier, challenge := pkce("t")
	q := b.consent(e.authorizeURL(challenge, "echo"), []string{"echo"}, nil)
	code := q.Get("code")
	base := func() url.Values {
		return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
			"client_id": {oauthClientID}, "redirect_uri": {"http://127.0.0.1:43210/callback"}}
	}
	for _, tc := range []struct {
		name   string
		mod    func(url.Values)
		status int
		want   string
	}{
		{"wrong verifier", func(f url.Values) { f.Set("code_verifier", strings.Repeat("x", 64)) }, 400, "invalid_grant"},
		{"no verifier", func(f url.Values) { f.Del("code_verifier") }, 400, "invalid_grant"},
		{"challenge as verifier", func(f url.Values) { f.Set("code_verifier", challenge) }, 400, "invalid_grant"},
		{"other redirect", func(f url.Values) { f.Set("redirect_uri", "http://127.0.0.1:43210/other") }, 400, "invalid_grant"},
		{"other client", func(f url.Values) { f.Set("client_id", "nobody") }, 401, "invalid_client"},
		{"a secret", func(f url.Values) { f.Set("client_secret", "s3cret") }, 401, "invalid_client"},
		{"other resource", func(f url.Values) { f.Set("resource", "https://other.example/mcp") }, 400, "invalid_target"},
		{"forged code", func(f url.Values) { f.Set("code", "oac_"+strings.Repeat("A", 40)+".9999999999.abc") }, 400, "invalid_grant"},
		{"unsupported grant", func(f url.Values) { f.Set("grant_type", "password") }, 400, "unsupported_grant_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := base()
			tc.mod(f)
			status, out := e.tokenRequest(t, f)
			if status != tc.status || out["error"] != tc.want {
				t.Fatalf("got %d %v, want %d %s", status, out, tc.status, tc.want)
			}
		})
	}
	// None of the refusals spent the code.
	if status, out := e.tokenRequest(t, base()); status != http.StatusOK {
		t.Fatalf("the code after the refusals: %d %v", status, out)
	}
	// An expired code is refused.
	q = b.consent(e.authorizeURL(challenge, "echo"), []string{"echo"}, nil)
	e.clock.Advance(2 * 60e9)
	code = q.Get("code")
	if status, out := e.tokenRequest(t, base()); status != http.StatusBadRequest || out["error"] != "invalid_grant" {
		t.Fatalf("expired code: %d %v", status, out)
	}
}

// TestOAuthRefreshRotation: a refresh token is good once; each use hands
// out a new pair; an old one presented again revokes the grant.
func TestOAuthRefreshRotation(t *testing.T) {
	e := newOAuthEnv(t)
	b := signedIn(t, e)
	tok := e.grant(t, b)
	refresh := func(rt string) (int, map[string]any) {
		return e.tokenRequest(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {oauthClientID}})
	}
	status, next := refresh(tok["refresh_token"].(string))
	if status != http.StatusOK || next["refresh_token"] == tok["refresh_token"] || next["access_token"] == "" {
		t.Fatalf("refresh: %d %v", status, next)
	}
	if _, err := e.mcpSession(t, next["access_token"].(string)); err != nil {
		t.Fatalf("the refreshed access token: %v", err)
	}
	// Another client cannot use it.
	if status, out := e.tokenRequest(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {next["refresh_token"].(string)}, "client_id": {"nobody"}}); status != http.StatusUnauthorized {
		t.Fatalf("refresh by another client: %d %v", status, out)
	}
	// The first refresh token again: the whole grant goes.
	if status, out := refresh(tok["refresh_token"].(string)); status != http.StatusBadRequest || out["error"] != "invalid_grant" {
		t.Fatalf("reused refresh token: %d %v", status, out)
	}
	if status, out := refresh(next["refresh_token"].(string)); status != http.StatusBadRequest {
		t.Fatalf("the newest refresh token after a reuse: %d %v", status, out)
	}
	if _, err := e.mcpSession(t, next["access_token"].(string)); err == nil {
		t.Fatal("the access token still works after a refresh token was reused")
	}
}

// TestOAuthAccessTokenBoundToResource: a token issued for one MCP
// endpoint is refused at another, and at the capability locations; an
// expired one is refused.
func TestOAuthAccessTokenBoundToResource(t *testing.T) {
	e := newOAuthEnv(t, func(c *provider.Config) { c.Endpoints = append(c.Endpoints, c.Issuer+"/mcp-other") })
	tok := e.grant(t, signedIn(t, e))
	access := tok["access_token"].(string)
	ctx := context.Background()
	req := &auth.Request{Authorization: "Bearer " + access}
	here, _ := e.p.EndpointVerifier(e.resource)
	other, _ := e.p.EndpointVerifier(e.url + "/mcp-other")
	id, err := here.Verify(ctx, req)
	if err != nil || !id.ScopeChallenge || id.UserID != "alice" {
		t.Fatalf("at its resource: %+v %v", id, err)
	}
	if _, err := other.Verify(ctx, req); err == nil {
		t.Fatal("a token for one endpoint was accepted at another")
	}
	if _, err := e.p.Verify(ctx, req); err == nil {
		t.Fatal("an access token was accepted at the capability locations")
	}
	tampered := access[:len(access)-3] + "AAA"
	if _, err := here.Verify(ctx, &auth.Request{Authorization: "Bearer " + tampered}); err == nil {
		t.Fatal("a tampered access token was accepted")
	}
	e.clock.Advance(11 * 60e9)
	if _, err := here.Verify(ctx, req); err == nil {
		t.Fatal("an expired access token was accepted")
	}
}

// TestOAuthRevocation: revoking either token (RFC 7009) revokes the grant;
// so does revoking the agent on "Your agents".
func TestOAuthRevocation(t *testing.T) {
	e := newOAuthEnv(t)
	b := signedIn(t, e)
	revoke := func(token string) int {
		resp, err := http.PostForm(e.url+"/oauth/revoke", url.Values{"token": {token}, "client_id": {oauthClientID}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, which := range []string{"refresh_token", "access_token"} {
		tok := e.grant(t, b)
		if status := revoke(tok[which].(string)); status != http.StatusOK {
			t.Fatalf("revoke %s: %d", which, status)
		}
		if _, err := e.mcpSession(t, tok["access_token"].(string)); err == nil {
			t.Fatalf("the access token works after its %s was revoked", which)
		}
	}
	if status := revoke("garbage"); status != http.StatusOK {
		t.Fatalf("revoking an unknown token: %d", status)
	}
	// The user revokes the agent.
	tok := e.grant(t, b)
	id, err := e.p.EndpointVerifier(e.resource)
	if err != nil {
		t.Fatal(err)
	}
	who, err := id.Verify(context.Background(), &auth.Request{Authorization: "Bearer " + tok["access_token"].(string)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.p.RevokeAgent(context.Background(), "alice", who.AgentID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.mcpSession(t, tok["access_token"].(string)); err == nil {
		t.Fatal("the access token works after the user revoked the agent")
	}
}

// TestOAuthConsentPage: the consent shows the client as untrusted text,
// where it returns, and what it asks for; it is never framed; its form
// needs the page's token; denying tells the client.
func TestOAuthConsentPage(t *testing.T) {
	e := newOAuthEnv(t)
	b := signedIn(t, e)
	_, challenge := pkce("c")
	_, _, h := b.get(e.authorizeURL(challenge, "echo check_balance"))
	loc, _ := url.Parse(h.Get("Location"))
	_, _, h = b.get(loc.RequestURI())
	page, _ := url.Parse(h.Get("Location"))
	status, body, h := b.get(page.RequestURI())
	if status != http.StatusOK {
		t.Fatalf("page: %d", status)
	}
	for _, want := range []string{"Desk &lt;b&gt;App&lt;/b&gt;", "http://127.0.0.1:43210", "cap-echo", "cap-check_balance"} {
		if !strings.Contains(body, want) {
			t.Errorf("the consent page lacks %q", want)
		}
	}
	if strings.Contains(body, "<b>App</b>") {
		t.Error("the client's name reached the page as HTML")
	}
	if h.Get("X-Frame-Options") != "DENY" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
		!strings.Contains(h.Get("Content-Security-Policy"), "form-action 'self' http://127.0.0.1:43210") {
		t.Errorf("headers %v", h)
	}
	// Until the user allows something, the client's host is pending.
	hosts, err := e.st.ListUserHosts(context.Background(), "alice")
	if err != nil || len(hosts) != 1 || hosts[0].Status != "pending" || hosts[0].OAuthClient != oauthClientID {
		t.Fatalf("hosts before the consent: %+v %v", hosts, err)
	}
	token := oauthField.FindStringSubmatch(body)[1]
	forged := url.Values{"csrf": {"forged"}, "oauth": {token}, "step": {"review"}, "request": {page.Query().Get("request")}, "action": {"allow"}, "capability": {"echo"}}
	if resp := b.postResp(page.Path, forged); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a forged form: %d", resp.StatusCode)
	}
	cross := newBrowser(t, e.env)
	cross.signIn("bob", "/")
	if status, _, _ := cross.get(page.RequestURI()); status != http.StatusNotFound && status != http.StatusBadRequest {
		t.Fatalf("bob opened alice's consent: %d", status)
	}
	q := b.consent(e.authorizeURL(challenge, "echo"), nil, nil)
	if q.Get("error") != "access_denied" || q.Get("code") != "" || q.Get("state") != "st-1" {
		t.Fatalf("denied: %v", q)
	}
	if hosts, _ := e.st.ListUserHosts(context.Background(), "alice"); len(hosts) != 1 || hosts[0].Status != "pending" {
		t.Fatalf("hosts after a denial: %+v", hosts)
	}
	// Once allowed, "Your agents" names the client.
	e.grant(t, b)
	if status, page, _ := b.get("/agents"); status != http.StatusOK || !strings.Contains(page, "identified as <code>desk-app</code>") {
		t.Fatalf("agents page: %d %s", status, page)
	}
}

// TestOAuthStepUp: a consent for more adds grants to the same agent; a
// consent for what the agent holds already needs no page.
func TestOAuthStepUp(t *testing.T) {
	e := newOAuthEnv(t)
	b := signedIn(t, e)
	first := e.grant(t, b)
	cs, err := e.mcpSession(t, first["access_token"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(t, cs); strings.Join(got, ",") != "echo" {
		t.Fatalf("tools before: %v", got)
	}
	verifier, challenge := pkce("s")
	q := b.consent(e.authorizeURL(challenge, "check_balance"), []string{"check_balance"}, nil)
	status, second := e.redeem(t, q.Get("code"), verifier)
	if status != http.StatusOK || second["scope"] != "check_balance echo" {
		t.Fatalf("second token: %d %v", status, second)
	}
	// Both tokens act as the one agent.
	v, _ := e.p.EndpointVerifier(e.resource)
	a1, _ := v.Verify(context.Background(), &auth.Request{Authorization: "Bearer " + first["access_token"].(string)})
	a2, _ := v.Verify(context.Background(), &auth.Request{Authorization: "Bearer " + second["access_token"].(string)})
	if a1 == nil || a2 == nil || a1.AgentID != a2.AgentID {
		t.Fatalf("agents %v %v", a1, a2)
	}
	// Asking for what it holds goes straight back with a code.
	verifier, challenge = pkce("u")
	q = b.consent(e.authorizeURL(challenge, "echo"), []string{"echo"}, nil)
	if status, out := e.redeem(t, q.Get("code"), verifier); status != http.StatusOK {
		t.Fatalf("third token: %d %v", status, out)
	}
}

// TestOAuthRegisteringAgainKeepsTheAgent: a client that registers again
// with the same details, as some do before every authorization, gets
// another client_id, but its consents add to the same host and agent.
func TestOAuthRegisteringAgainKeepsTheAgent(t *testing.T) {
	e := newOAuthEnv(t, func(c *provider.Config) { c.OAuth.DynamicRegistration = true })
	b := signedIn(t, e)
	register := func() string {
		resp, err := http.Post(e.url+"/oauth/register", "application/json",
			strings.NewReader(`{"redirect_uris":["http://127.0.0.1/callback"],"client_name":"Re-registering host"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			ClientID string `json:"client_id"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("register: %d %v", resp.StatusCode, err)
		}
		return out.ClientID
	}
	token := func(clientID, scope string, allow []string) string {
		verifier, challenge := pkce(scope[:1])
		q := b.consent(e.authorizeURL(challenge, scope, func(v url.Values) { v.Set("client_id", clientID) }), allow, nil)
		status, tok := e.tokenRequest(t, url.Values{
			"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "code_verifier": {verifier},
			"client_id": {clientID}, "redirect_uri": {"http://127.0.0.1:43210/callback"},
		})
		if status != http.StatusOK {
			t.Fatalf("token: %d %v", status, tok)
		}
		return tok["access_token"].(string)
	}
	first := register()
	a1 := token(first, "echo", []string{"echo"})
	e.clock.Advance(2 * time.Second)
	second := register()
	if first == second {
		t.Fatal("two registrations a moment apart got one client_id")
	}
	a2 := token(second, "check_balance", []string{"check_balance"})
	v, _ := e.p.EndpointVerifier(e.resource)
	id1, err1 := v.Verify(context.Background(), &auth.Request{Authorization: "Bearer " + a1})
	id2, err2 := v.Verify(context.Background(), &auth.Request{Authorization: "Bearer " + a2})
	if err1 != nil || err2 != nil || id1.AgentID != id2.AgentID {
		t.Fatalf("agents: %v %v, %v %v", id1, err1, id2, err2)
	}
	if hosts, _ := e.st.ListUserHosts(context.Background(), "alice"); len(hosts) != 1 {
		t.Fatalf("hosts: %+v", hosts)
	}
	cs, err := e.mcpSession(t, a1)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(toolNames(t, cs), ","); got != "check_balance,echo" {
		t.Fatalf("tools: %s", got)
	}
}

// TestOAuthNoScope: a request that names no scope lets the user choose
// among every capability they may see.
func TestOAuthNoScope(t *testing.T) {
	e := newOAuthEnv(t)
	b := signedIn(t, e)
	_, challenge := pkce("n")
	_, _, h := b.get(e.authorizeURL(challenge, ""))
	loc, _ := url.Parse(h.Get("Location"))
	if !strings.HasPrefix(loc.Path, "/oauth/consent") {
		t.Fatalf("authorize without a scope went to %s", loc)
	}
	_, _, h = b.get(loc.RequestURI())
	page, _ := url.Parse(h.Get("Location"))
	status, body, _ := b.get(page.RequestURI())
	if status != http.StatusOK {
		t.Fatalf("page: %d", status)
	}
	for _, name := range []string{"echo", "check_balance", "transfer", "statement"} {
		if !strings.Contains(body, `id="cap-`+name+`"`) {
			t.Errorf("the consent page does not offer %s", name)
		}
	}
}

// TestOAuthMetadata: the authorization server's metadata names its
// endpoints and what it supports, and nothing when the server is off.
func TestOAuthMetadata(t *testing.T) {
	e := newOAuthEnv(t)
	resp, err := http.Get(e.url + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var md map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&md); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	want := map[string]any{
		"issuer":                                e.url,
		"authorization_endpoint":                e.url + "/oauth/authorize",
		"token_endpoint":                        e.url + "/oauth/token",
		"revocation_endpoint":                   e.url + "/oauth/revoke",
		"client_id_metadata_document_supported": true,
		"authorization_response_iss_parameter_supported": true,
	}
	for k, v := range want {
		if md[k] != v {
			t.Errorf("%s = %v, want %v", k, md[k], v)
		}
	}
	if fmt.Sprint(md["code_challenge_methods_supported"]) != "[S256]" || fmt.Sprint(md["token_endpoint_auth_methods_supported"]) != "[none]" ||
		fmt.Sprint(md["scopes_supported"]) != "[check_balance echo statement transfer]" || md["registration_endpoint"] != nil {
		t.Errorf("metadata %v", md)
	}
	off := newPageEnv(t)
	if resp, err := http.Get(off.url + "/.well-known/oauth-authorization-server"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("without OAuth: %v %v", resp.StatusCode, err)
	}
}
