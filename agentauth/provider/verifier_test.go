package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/ratelimit"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

// seen is what the whoami capabilities report of the identity that ran
// them.
type seen struct {
	Subject string `json:"subject"`
	AgentID string `json:"agent_id"`
	HostID  string `json:"host_id"`
	UserID  string `json:"user_id"`
	// Session is the agent id of the identity's Agent Auth session.
	Session string `json:"session"`
}

func whoami(_ context.Context, id *auth.Identity, _ struct{}) (seen, error) {
	out := seen{Subject: id.Subject, AgentID: id.AgentID, HostID: id.HostID, UserID: id.UserID}
	if s := agentauth.SessionOf(id); s != nil {
		out.Session = s.Agent.ID
	}
	return out, nil
}

// remotePath is where the "remote" capability executes, under the issuer.
const remotePath = "/elsewhere/capability/execute"

// newIdentityEnv is a provider whose location runs capabilities whose
// context is the verified identity: "whoami" at the default location,
// "remote" at the issuer's remotePath, and "members", which anonymous
// callers do not see. mods change the provider's configuration.
func newIdentityEnv(t testing.TB, mods ...func(*provider.Config)) *env {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	c := &clock{t: time.Now().Truncate(time.Second)}
	st := store.NewMemory(c.Now)
	reg := core.MustRegistry(
		core.MustDefine("whoami", "Report the caller.", whoami),
		core.MustDefine("remote", "Report the caller, elsewhere.", whoami, core.WithLocation(issuer+remotePath)),
		core.MustDefine("members", "Report a member.", whoami,
			core.WithVisibility(func(_ context.Context, id *auth.Identity, _ bool) bool { return id != nil })),
	)
	cfg := provider.Config{Issuer: issuer, ProviderName: "test", Store: st, Registry: reg, Now: c.Now, PollInterval: 2 * time.Second}
	for _, m := range mods {
		m(&cfg)
	}
	p, err := provider.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exec, err := core.NewExecutor(reg, core.IdentityContext, core.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return serveEnv(t, srv, p, exec, nil, st, c)
}

// member registers an agent of a new host for alice, holding grants of
// caps, and returns its key, its id and its host's id.
func (e *env) member(caps ...string) (a *key, agentID, hostID string) {
	e.t.Helper()
	a = newKey(e.t)
	r := e.register(newKey(e.t), a, map[string]any{"name": "member", "capabilities": caps})
	if r.status != http.StatusOK {
		e.t.Fatalf("register: %d %s", r.status, r.raw)
	}
	e.approve(r, "alice", nil)
	return a, r.str("agent_id"), r.str("host_id")
}

// call executes capability with a token of agent a for aud.
func (e *env) call(a *key, agentID, aud, capability string) response {
	e.t.Helper()
	return e.do(http.MethodPost, "/capability/execute", e.agentToken(a, agentID, aud, nil), map[string]any{"capability": capability})
}

// doAt is env.do against another server of the test.
func doAt(t *testing.T, srv *httptest.Server, method, path, token string, body any) response {
	t.Helper()
	e := &env{t: t, srv: srv, url: srv.URL}
	return e.do(method, path, token, body)
}

// TestProviderIsAVerifier: the Provider is the auth.Verifier of its
// capability locations. Its challenge points agents at the discovery
// document; an agent JWT verified through httpx becomes the agent's
// identity (subject and agent id the agent's, its host, the user it acts
// for, its session), and a host JWT of list and describe the host's.
func TestProviderIsAVerifier(t *testing.T) {
	e := newIdentityEnv(t)
	var v auth.Verifier = e.p
	challenge := `AgentAuth discovery="` + e.url + `/.well-known/agent-configuration"`
	if got := auth.ChallengeOf(v); got != challenge || e.p.Challenge() != challenge {
		t.Errorf("challenge %q, want %q", got, challenge)
	}
	if r := e.do(http.MethodPost, "/capability/execute", "", map[string]any{"capability": "whoami"}); r.status != http.StatusUnauthorized ||
		r.code() != agentcap.CodeAuthenticationRequired || !slices.Equal(r.header.Values("WWW-Authenticate"), []string{challenge}) {
		t.Errorf("no token: %d %q %s", r.status, r.header.Values("WWW-Authenticate"), r.raw)
	}

	a, agentID, hostID := e.member("whoami")
	r := e.call(a, agentID, e.p.DefaultLocation(), "whoami")
	if r.status != http.StatusOK {
		t.Fatalf("whoami: %d %s", r.status, r.raw)
	}
	var got struct {
		Data seen `json:"data"`
	}
	if err := json.Unmarshal(r.raw, &got); err != nil {
		t.Fatal(err)
	}
	want := seen{Subject: agentID, AgentID: agentID, HostID: hostID, UserID: "alice", Session: agentID}
	if diff := cmp.Diff(want, got.Data); diff != "" {
		t.Errorf("the agent's identity (-want +got):\n%s", diff)
	}

	// A host JWT lists and describes as the host, for its linked user, and
	// never runs a capability.
	host := newKey(t)
	e.approve(e.register(host, newKey(t), map[string]any{"name": "a", "capabilities": []any{"whoami"}}), "alice", nil)
	ctx := context.Background()
	id, err := e.p.Verify(ctx, &auth.Request{Authorization: "Bearer " + e.hostToken(host, nil), Discovery: true})
	if err != nil {
		t.Fatal(err)
	}
	h := agentauth.HostOf(id)
	if h == nil || id.Subject != "host:"+h.ID || id.HostID != h.ID || id.AgentID != "" || id.UserID != "alice" || agentauth.SessionOf(id) != nil {
		t.Errorf("the host's identity: %+v (host %+v)", id, h)
	}
	if err := id.Authorizer.Authorize(ctx, &auth.Call{Capability: "whoami"}); agentcap.CodeOf(err) != agentcap.CodeAuthenticationRequired {
		t.Errorf("a host runs a capability: %v", err)
	}
	if _, err := e.p.Verify(ctx, &auth.Request{Authorization: "Bearer " + e.hostToken(host, nil)}); agentcap.CodeOf(err) != agentcap.CodeInvalidJWT {
		t.Errorf("a host JWT outside list and describe: %v", err)
	}
}

// TestProviderAudiencePerLocation: an execution's agent JWT must name
// where its capability executes (protocol §4.3): the capability's own
// location, else the default location. A token made for the issuer or
// for another location is 401 invalid_jwt, with the challenge.
func TestProviderAudiencePerLocation(t *testing.T) {
	e := newIdentityEnv(t)
	a, agentID, _ := e.member("whoami", "remote")
	remote := e.url + remotePath
	for _, tt := range []struct {
		capability, aud string
		status          int
	}{
		{"whoami", e.p.DefaultLocation(), http.StatusOK},
		{"whoami", e.url, http.StatusUnauthorized},
		{"whoami", remote, http.StatusUnauthorized},
		{"remote", remote, http.StatusOK},
		{"remote", e.p.DefaultLocation(), http.StatusUnauthorized},
		{"remote", e.url, http.StatusUnauthorized},
	} {
		r := e.call(a, agentID, tt.aud, tt.capability)
		if r.status != tt.status {
			t.Errorf("%s with a token for %s: %d %s, want %d", tt.capability, tt.aud, r.status, r.raw, tt.status)
			continue
		}
		if tt.status == http.StatusUnauthorized && (r.code() != agentcap.CodeInvalidJWT ||
			r.str("message") != "agent JWT audience is not this capability's location" ||
			!slices.Equal(r.header.Values("WWW-Authenticate"), []string{e.p.Challenge()})) {
			t.Errorf("%s with a token for %s: %q %s", tt.capability, tt.aud, r.header.Values("WWW-Authenticate"), r.raw)
		}
	}
}

// authorizeLog records the calls Config.Authorize was asked about.
type authorizeLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *authorizeLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, s)
}

func (l *authorizeLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.calls
	l.calls = nil
	return out
}

// TestProviderAuthorizeOrder: Config.Authorize runs for a call after the
// token's audience and the capability's rate limit are checked, and
// before the agent's grants, so that its refusal wins over
// capability_not_granted. It is given the agent's identity.
func TestProviderAuthorizeOrder(t *testing.T) {
	var log authorizeLog
	refuse := errors.New("no")
	var refusing sync.Map // capability -> true
	e := newIdentityEnv(t, func(c *provider.Config) {
		c.RateLimits = provider.RateLimits{
			Limiter:       ratelimit.NewMemory(0),
			PerCapability: map[string]ratelimit.Limit{"remote": ratelimit.PerHour(1)},
		}
		c.Authorize = func(_ context.Context, id *auth.Identity, call *auth.Call) error {
			log.add(call.Capability + " by " + id.AgentID + " for " + id.UserID)
			if _, ok := refusing.Load(call.Capability); ok {
				return agentcap.Wrap(agentcap.CodeUnauthorized, "refused by the application", refuse)
			}
			return nil
		}
	})
	a, agentID, _ := e.member("whoami", "remote")
	by := " by " + agentID + " for alice"

	if r := e.call(a, agentID, e.p.DefaultLocation(), "whoami"); r.status != http.StatusOK {
		t.Fatalf("whoami: %d %s", r.status, r.raw)
	}
	if diff := cmp.Diff([]string{"whoami" + by}, log.take()); diff != "" {
		t.Errorf("granted call (-want +got):\n%s", diff)
	}

	// The audience first: Authorize is not asked about a token made for
	// another location.
	if r := e.call(a, agentID, e.url+remotePath, "whoami"); r.status != http.StatusUnauthorized || r.code() != agentcap.CodeInvalidJWT {
		t.Errorf("token for another location: %d %s", r.status, r.raw)
	}
	if got := log.take(); len(got) != 0 {
		t.Errorf("Authorize asked before the audience check: %q", got)
	}

	// Then the capability's rate limit.
	if r := e.call(a, agentID, e.url+remotePath, "remote"); r.status != http.StatusOK {
		t.Fatalf("remote: %d %s", r.status, r.raw)
	}
	if r := e.call(a, agentID, e.url+remotePath, "remote"); r.status != http.StatusTooManyRequests || r.code() != agentcap.CodeRateLimited {
		t.Errorf("remote past its limit: %d %s", r.status, r.raw)
	}
	if diff := cmp.Diff([]string{"remote" + by}, log.take()); diff != "" {
		t.Errorf("Authorize asked past the capability's limit (-want +got):\n%s", diff)
	}

	// Then Authorize, before the grants: members is not granted, and
	// Authorize's refusal is the answer.
	refusing.Store("members", true)
	if r := e.call(a, agentID, e.p.DefaultLocation(), "members"); r.status != http.StatusForbidden || r.code() != agentcap.CodeUnauthorized ||
		r.str("message") != "refused by the application" {
		t.Errorf("refused and not granted: %d %s", r.status, r.raw)
	}
	refusing.Delete("members")
	if r := e.call(a, agentID, e.p.DefaultLocation(), "members"); r.status != http.StatusForbidden || r.code() != agentcap.CodeCapabilityNotGranted {
		t.Errorf("not granted: %d %s", r.status, r.raw)
	}
	if diff := cmp.Diff([]string{"members" + by, "members" + by}, log.take()); diff != "" {
		t.Errorf("calls of an ungranted capability (-want +got):\n%s", diff)
	}
}

func names(t *testing.T, r response) []string {
	t.Helper()
	var page struct {
		Capabilities []map[string]any `json:"capabilities"`
	}
	if err := json.Unmarshal(r.raw, &page); err != nil {
		t.Fatalf("list: %v: %s", err, r.raw)
	}
	var out []string
	for _, c := range page.Capabilities {
		if _, ok := c["grant_status"]; ok {
			t.Errorf("%v: grant_status for an anonymous caller", c["name"])
		}
		out = append(out, c["name"].(string))
	}
	return out
}

// TestProviderAnonymousDiscovery: Config.AllowAnonymousDiscovery lets
// list and describe run without a token, as the nil identity, which sees
// only the capabilities whose visibility admits it; execution always
// needs a token. Without it, a listing without a token is 401.
func TestProviderAnonymousDiscovery(t *testing.T) {
	closed := newIdentityEnv(t)
	if r := closed.do(http.MethodGet, "/capability/list", "", nil); r.status != http.StatusUnauthorized ||
		r.code() != agentcap.CodeAuthenticationRequired || !slices.Equal(r.header.Values("WWW-Authenticate"), []string{closed.p.Challenge()}) {
		t.Errorf("anonymous listing, not allowed: %d %q %s", r.status, r.header.Values("WWW-Authenticate"), r.raw)
	}

	e := newIdentityEnv(t, func(c *provider.Config) { c.AllowAnonymousDiscovery = true })
	r := e.do(http.MethodGet, "/capability/list", "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("anonymous listing: %d %s", r.status, r.raw)
	}
	if diff := cmp.Diff([]string{"remote", "whoami"}, names(t, r)); diff != "" {
		t.Errorf("anonymous listing (-want +got):\n%s", diff)
	}
	if r := e.do(http.MethodGet, "/capability/describe?name=whoami", "", nil); r.status != http.StatusOK || r.str("name") != "whoami" || r.body["grant_status"] != nil {
		t.Errorf("anonymous describe: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodGet, "/capability/describe?name=members", "", nil); r.status != http.StatusNotFound || r.code() != agentcap.CodeCapabilityNotFound {
		t.Errorf("anonymous describe of a capability it does not see: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodPost, "/capability/execute", "", map[string]any{"capability": "whoami"}); r.status != http.StatusUnauthorized ||
		r.code() != agentcap.CodeAuthenticationRequired || !slices.Equal(r.header.Values("WWW-Authenticate"), []string{e.p.Challenge()}) {
		t.Errorf("anonymous execution: %d %q %s", r.status, r.header.Values("WWW-Authenticate"), r.raw)
	}
	// An agent still lists as itself.
	a, agentID, _ := e.member("whoami")
	if r := e.do(http.MethodGet, "/capability/list", e.agentToken(a, agentID, e.url, nil), nil); r.status != http.StatusOK || len(r.body["capabilities"].([]any)) != 3 {
		t.Errorf("an agent's listing: %d %s", r.status, r.raw)
	}
}

// TestEndpointVerifier: the verifier of an endpoint among
// Config.Endpoints (an MCP endpoint, say) takes only agent JWTs made for
// that endpoint, whatever the capability's location, and the provider's
// own locations refuse them; an endpoint that is not among
// Config.Endpoints has no verifier.
func TestEndpointVerifier(t *testing.T) {
	var endpoint string
	e := newIdentityEnv(t, func(c *provider.Config) {
		endpoint = c.Issuer + "/mcp"
		c.Endpoints = []string{endpoint}
	})
	for _, other := range []string{"https://elsewhere.example/mcp", e.url + "/mcp/", e.p.DefaultLocation(), e.url} {
		if v, err := e.p.EndpointVerifier(other); err == nil || v != nil {
			t.Errorf("EndpointVerifier(%q) = %v, %v; want an error", other, v, err)
		}
	}
	if v, err := newIdentityEnv(t).p.EndpointVerifier(endpoint); err == nil || v != nil {
		t.Errorf("EndpointVerifier without Config.Endpoints = %v, %v; want an error", v, err)
	}

	v, err := e.p.EndpointVerifier(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if got := auth.ChallengeOf(v); got != e.p.Challenge() {
		t.Errorf("challenge %q, want %q", got, e.p.Challenge())
	}
	exec, err := core.NewExecutor(core.MustRegistry(
		core.MustDefine("whoami", "Report the caller.", whoami),
		core.MustDefine("remote", "Report the caller, elsewhere.", whoami, core.WithLocation(e.url+remotePath)),
	), core.IdentityContext, core.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpx.New(exec, httpx.Config{Verifier: v})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	a, agentID, _ := e.member("whoami", "remote")
	at := func(capability, aud string) response {
		return doAt(t, srv, http.MethodPost, "/capability/execute", e.agentToken(a, agentID, aud, nil), map[string]any{"capability": capability})
	}
	for _, capability := range []string{"whoami", "remote"} {
		if r := at(capability, endpoint); r.status != http.StatusOK {
			t.Errorf("%s with a token for the endpoint: %d %s", capability, r.status, r.raw)
		}
	}
	for _, tt := range []struct{ capability, aud string }{
		{"whoami", e.p.DefaultLocation()},
		{"remote", e.url + remotePath},
		{"whoami", e.url},
	} {
		if r := at(tt.capability, tt.aud); r.status != http.StatusUnauthorized || r.code() != agentcap.CodeInvalidJWT ||
			!slices.Equal(r.header.Values("WWW-Authenticate"), []string{e.p.Challenge()}) {
			t.Errorf("%s at the endpoint with a token for %s: %d %q %s", tt.capability, tt.aud, r.status, r.header.Values("WWW-Authenticate"), r.raw)
		}
	}
	// The reverse: the provider's own location refuses a token made for
	// the endpoint.
	if r := e.call(a, agentID, endpoint, "whoami"); r.status != http.StatusUnauthorized || r.code() != agentcap.CodeInvalidJWT {
		t.Errorf("a token for the endpoint at the default location: %d %s", r.status, r.raw)
	}
}
