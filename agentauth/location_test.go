package agentauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// lcWorld is a directory of hosts and agents, with the verifiers of its
// agent and host JWTs, for tests of the identities New builds.
type lcWorld struct {
	alice, pending, robots     *agentauthtest.Host
	own, hostsUser, autonomous *agentauthtest.Agent
	malformed                  *agentauthtest.Agent
	dir                        *agentauth.MemoryDirectory
	agents                     *agentauth.Verifier
	hosts                      *agentauth.HostVerifier
}

// lcGrantExpiry is when the pay grant of the agents of lcWorld expires.
var lcGrantExpiry = htNow.Add(time.Minute)

func newLCWorld(t *testing.T) *lcWorld {
	t.Helper()
	w := &lcWorld{
		alice:   htHost(1, agentauthtest.Host{ID: "hst_alice", UserID: "user_alice"}),
		pending: htHost(3, agentauthtest.Host{ID: "hst_pending", UserID: "user_p", Status: agentcap.StatusPending}),
		robots:  htHost(4, agentauthtest.Host{ID: "hst_robots"}),
	}
	pay := agentauth.Grant{Capability: "pay", Status: agentcap.StatusActive, ExpiresAt: &lcGrantExpiry,
		Constraints: map[string]json.RawMessage{"to": json.RawMessage(`"bob"`)}}
	// A delegated agent acting for a user of its own, one acting for its
	// host's user, and an autonomous agent of the same linked host.
	w.own = w.alice.NewAgent(agentauthtest.Agent{ID: "agt_own", UserID: "user_bob", Grants: []agentauth.Grant{pay}})
	w.hostsUser = w.alice.NewAgent(agentauthtest.Agent{ID: "agt_hosts_user", Grants: []agentauth.Grant{pay}})
	w.hostsUser.UserID = "" // its record names no user: the host's applies
	w.autonomous = w.alice.NewAgent(agentauthtest.Agent{ID: "agt_autonomous", Mode: agentcap.ModeAutonomous, Grants: []agentauth.Grant{pay}})
	// A grant whose constraint the server cannot read: a fault of the
	// server's records, not of the call.
	w.malformed = w.alice.NewAgent(agentauthtest.Agent{ID: "agt_malformed", Grants: []agentauth.Grant{
		{Capability: "pay", Status: agentcap.StatusActive, Constraints: map[string]json.RawMessage{"to": json.RawMessage(`{"in":"bob"}`)}},
	}})
	dir, err := agentauthtest.NewDirectory([]*agentauthtest.Host{w.alice, w.pending, w.robots},
		[]*agentauthtest.Agent{w.own, w.hostsUser, w.autonomous, w.malformed})
	if err != nil {
		t.Fatal(err)
	}
	w.dir = dir
	if w.agents, err = agentauth.NewVerifier(agentauth.VerifierConfig{Directory: dir, Audiences: []string{htAudience}, Now: htClock}); err != nil {
		t.Fatal(err)
	}
	if w.hosts, err = agentauth.NewHostVerifier(agentauth.HostVerifierConfig{Directory: dir, Audiences: []string{htIssuer}, Now: htClock}); err != nil {
		t.Fatal(err)
	}
	return w
}

// location returns New(cfg) with the world's verifiers filled in.
func (w *lcWorld) location(t *testing.T, cfg agentauth.Config) auth.Verifier {
	t.Helper()
	if cfg.Sessions == nil {
		cfg.Sessions = w.agents
	}
	if cfg.Hosts == nil {
		cfg.Hosts = w.hosts
	}
	if cfg.Issuer == "" {
		cfg.Issuer = htIssuer
	}
	if cfg.Now == nil {
		cfg.Now = htClock
	}
	v, err := agentauth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// verify runs v on a request with the bearer token, for execute
// (discovery false) or for list and describe.
func verify(v auth.Verifier, token string, discovery bool) (*auth.Identity, error) {
	return v.Verify(context.Background(), &auth.Request{Authorization: "Bearer " + token, Discovery: discovery})
}

// identityNames are the names an identity carries, for comparison.
type identityNames struct {
	Subject, AgentID, HostID, UserID string
}

func namesOf(id *auth.Identity) identityNames {
	return identityNames{id.Subject, id.AgentID, id.HostID, id.UserID}
}

// The identity of an agent names the agent, its host and the user it acts
// for, carries the verified session, and decides calls by its grants.
func TestNewAgentIdentity(t *testing.T) {
	w := newLCWorld(t)
	v := w.location(t, agentauth.Config{})
	tests := []struct {
		name  string
		agent *agentauthtest.Agent
		want  identityNames
	}{
		{"agent with a user of its own", w.own, identityNames{"agt_own", "agt_own", "hst_alice", "user_bob"}},
		{"agent acting for its host's user", w.hostsUser, identityNames{"agt_hosts_user", "agt_hosts_user", "hst_alice", "user_alice"}},
		{"autonomous agent of a linked host", w.autonomous, identityNames{"agt_autonomous", "agt_autonomous", "hst_alice", ""}},
	}
	for _, tt := range tests {
		for _, discovery := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, discovery %v", tt.name, discovery), func(t *testing.T) {
				jti := fmt.Sprintf("jti-%v", discovery)
				id, err := verify(v, tt.agent.Token(agentauthtest.Token{Audience: htAudience, JTI: jti}), discovery)
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if diff := cmp.Diff(tt.want, namesOf(id)); diff != "" {
					t.Errorf("identity (-want +got):\n%s", diff)
				}
				s := agentauth.SessionOf(id)
				if s == nil || id.Claims != any(s) || s.Agent.ID != tt.agent.ID || s.Host.ID != "hst_alice" || s.Claims.ID != jti {
					t.Fatalf("Claims %#v is not the session of the token", id.Claims)
				}
				if agentauth.ActsFor(s) != tt.want.UserID {
					t.Errorf("ActsFor %q, identity UserID %q", agentauth.ActsFor(s), tt.want.UserID)
				}
				if h := agentauth.HostOf(id); h != nil {
					t.Errorf("HostOf an agent's identity: %+v", h)
				}
				if id.Authorizer == nil {
					t.Fatal("an agent's identity has no Authorizer")
				}
				if got := id.Authorizer.GrantStatus("pay"); got != agentcap.GrantStatusGranted {
					t.Errorf("GrantStatus(pay) = %q", got)
				}
				if got := id.Authorizer.GrantStatus("public_info"); got != agentcap.GrantStatusNotGranted {
					t.Errorf("GrantStatus(public_info) = %q", got)
				}
				if err := id.Authorizer.Authorize(context.Background(), &auth.Call{Capability: "pay", RequiredConstraints: []string{"to"},
					Arguments: map[string]json.RawMessage{"to": json.RawMessage(`"bob"`)}}); err != nil {
					t.Errorf("Authorize a granted call: %v", err)
				}
				err = id.Authorizer.Authorize(context.Background(), &auth.Call{Capability: "pay", RequiredConstraints: []string{"to"},
					Arguments: map[string]json.RawMessage{"to": json.RawMessage(`"mallory"`)}})
				if agentcap.CodeOf(err) != agentcap.CodeConstraintViolated {
					t.Errorf("Authorize a call outside the grant: %v", err)
				}
			})
		}
	}
}

// Config.Now is the clock of the grants an agent's identity checks.
func TestNewAgentIdentityGrantClock(t *testing.T) {
	w := newLCWorld(t)
	later := lcGrantExpiry.Add(time.Second)
	v := w.location(t, agentauth.Config{Now: func() time.Time { return later }})
	id, err := verify(v, w.own.Token(agentauthtest.Token{Audience: htAudience}), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := id.Authorizer.GrantStatus("pay"); got != agentcap.GrantStatusNotGranted {
		t.Errorf("GrantStatus of an expired grant = %q", got)
	}
	err = id.Authorizer.Authorize(context.Background(), &auth.Call{Capability: "pay", RequiredConstraints: []string{"to"},
		Arguments: map[string]json.RawMessage{"to": json.RawMessage(`"bob"`)}})
	if agentcap.CodeOf(err) != agentcap.CodeCapabilityNotGranted {
		t.Errorf("Authorize under an expired grant: %v", err)
	}
}

func TestActsFor(t *testing.T) {
	linked := &agentauth.Host{ID: "hst_1", UserID: "user_h"}
	tests := []struct {
		name string
		s    *agentauth.Session
		want string
	}{
		{"nil session", nil, ""},
		{"no agent", &agentauth.Session{Host: linked}, ""},
		{"the agent's own user", &agentauth.Session{Agent: &agentauth.Agent{ID: "a", Mode: agentcap.ModeDelegated, UserID: "user_a"}, Host: linked}, "user_a"},
		{"the host's user", &agentauth.Session{Agent: &agentauth.Agent{ID: "a", Mode: agentcap.ModeDelegated}, Host: linked}, "user_h"},
		{"no user anywhere", &agentauth.Session{Agent: &agentauth.Agent{ID: "a", Mode: agentcap.ModeDelegated}, Host: &agentauth.Host{ID: "hst_2"}}, ""},
		{"no host", &agentauth.Session{Agent: &agentauth.Agent{ID: "a", Mode: agentcap.ModeDelegated}}, ""},
		{"autonomous, whatever its records say", &agentauth.Session{Agent: &agentauth.Agent{ID: "a", Mode: agentcap.ModeAutonomous, UserID: "user_a"}, Host: linked}, ""},
	}
	for _, tt := range tests {
		if got := agentauth.ActsFor(tt.s); got != tt.want {
			t.Errorf("%s: ActsFor = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestSessionOfAndHostOf(t *testing.T) {
	s := &agentauth.Session{Agent: &agentauth.Agent{ID: "a"}}
	h := &agentauth.Host{ID: "h"}
	for _, id := range []*auth.Identity{nil, {Subject: "x"}, {Subject: "x", Claims: "a string"}} {
		if agentauth.SessionOf(id) != nil || agentauth.HostOf(id) != nil {
			t.Errorf("%+v: SessionOf %v, HostOf %v", id, agentauth.SessionOf(id), agentauth.HostOf(id))
		}
	}
	if got := agentauth.SessionOf(&auth.Identity{Claims: s}); got != s {
		t.Errorf("SessionOf = %p, want %p", got, s)
	}
	if got := agentauth.HostOf(&auth.Identity{Claims: s}); got != nil {
		t.Errorf("HostOf an agent = %+v", got)
	}
	if got := agentauth.HostOf(&auth.Identity{Claims: h}); got != h {
		t.Errorf("HostOf = %p, want %p", got, h)
	}
	if got := agentauth.SessionOf(&auth.Identity{Claims: h}); got != nil {
		t.Errorf("SessionOf a host = %+v", got)
	}
}

// The identity of a host JWT caller of list and describe names the host
// and its linked user (none while the host is pending), and can never run
// a capability: its Authorizer refuses every call and reports no grant
// status. A host JWT elsewhere is not an agent JWT.
func TestNewHostIdentity(t *testing.T) {
	w := newLCWorld(t)
	v := w.location(t, agentauth.Config{})
	tests := []struct {
		name string
		host *agentauthtest.Host
		want identityNames
	}{
		{"linked host", w.alice, identityNames{"host:hst_alice", "", "hst_alice", "user_alice"}},
		{"pending host", w.pending, identityNames{"host:hst_pending", "", "hst_pending", ""}},
		{"unlinked host", w.robots, identityNames{"host:hst_robots", "", "hst_robots", ""}},
	}
	exec := htExecutor(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := verify(v, tt.host.Token(agentauthtest.Token{Audience: htIssuer}), true)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if diff := cmp.Diff(tt.want, namesOf(id)); diff != "" {
				t.Errorf("identity (-want +got):\n%s", diff)
			}
			h := agentauth.HostOf(id)
			if h == nil || id.Claims != any(h) || h.ID != tt.host.ID {
				t.Fatalf("Claims %#v is not the host of the token", id.Claims)
			}
			if s := agentauth.SessionOf(id); s != nil {
				t.Errorf("SessionOf a host's identity: %+v", s)
			}
			if id.Authorizer == nil {
				t.Fatal("a host's identity has no Authorizer: it would run every capability")
			}
			for _, name := range []string{"public_info", "pay"} {
				if got := id.Authorizer.GrantStatus(name); got != "" {
					t.Errorf("GrantStatus(%s) = %q for a host", name, got)
				}
				e := agentcap.As(id.Authorizer.Authorize(context.Background(), &auth.Call{Capability: name}))
				if e == nil || e.Code != agentcap.CodeAuthenticationRequired || e.HTTPStatus() != 401 {
					t.Errorf("Authorize(%s) for a host: %v", name, e)
				}
			}
			if err := id.Authorizer.Recheck(context.Background()); err != nil {
				t.Errorf("Recheck: %v", err)
			}
			// Whatever transport hands the identity to the executor, the
			// host runs nothing; it sees what its user may see.
			out, err := exec.Execute(context.Background(), "public_info", id, nil)
			if e := agentcap.As(err); out != nil || e == nil || e.Code != agentcap.CodeAuthenticationRequired {
				t.Errorf("executing as a host: %s, %v", out, err)
			}
		})
	}

	// A host JWT on execute goes to the agent JWT verifier, which refuses
	// its type; without a host source, a host JWT is refused on listings
	// too.
	if _, err := verify(v, w.alice.Token(agentauthtest.Token{Audience: htIssuer}), false); agentcap.CodeOf(err) != agentcap.CodeInvalidJWT {
		t.Errorf("host JWT on execute: %v", err)
	}
	noHosts, err := agentauth.New(agentauth.Config{Sessions: w.agents, Issuer: htIssuer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verify(noHosts, w.alice.Token(agentauthtest.Token{Audience: htIssuer}), true); agentcap.CodeOf(err) != agentcap.CodeInvalidJWT {
		t.Errorf("host JWT without a host source: %v", err)
	}
	// A revoked host is refused in the host source's words.
	revoked := htHost(2, agentauthtest.Host{ID: "hst_revoked", Status: agentcap.StatusRevoked})
	if err := w.dir.PutHost(revoked.Record()); err != nil {
		t.Fatal(err)
	}
	if _, err := verify(v, revoked.Token(agentauthtest.Token{Audience: htIssuer}), true); agentcap.CodeOf(err) != agentcap.CodeHostRevoked {
		t.Errorf("revoked host: %v", err)
	}
}

// hostSourceFunc adapts a function to agentauth.HostSource.
type hostSourceFunc func(ctx context.Context, token string) (*agentauth.Host, error)

func (f hostSourceFunc) VerifyHost(ctx context.Context, token string) (*agentauth.Host, error) {
	return f(ctx, token)
}

// A host source that fails other than in the protocol's words is
// answered with a redacted internal error, its cause logged.
func TestNewHostSourceFailures(t *testing.T) {
	w := newLCWorld(t)
	tests := []struct {
		name   string
		source hostSourceFunc
		code   agentcap.Code
		logged bool
	}{
		{"plain error", func(context.Context, string) (*agentauth.Host, error) { return nil, errors.New("hosts: " + htSecret) },
			agentcap.CodeInternalError, true},
		{"no host and no error", func(context.Context, string) (*agentauth.Host, error) { return nil, nil },
			agentcap.CodeInternalError, true},
		{"refusal", func(context.Context, string) (*agentauth.Host, error) {
			return nil, agentcap.NewError(agentcap.CodeHostPending, "host pending")
		}, agentcap.CodeHostPending, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			v := w.location(t, agentauth.Config{Hosts: tt.source, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			id, err := verify(v, w.alice.Token(agentauthtest.Token{Audience: htIssuer}), true)
			e := agentcap.As(err)
			if id != nil || e == nil || e.Code != tt.code || strings.Contains(e.Message, "s3cret") {
				t.Fatalf("Verify: %v, %v; want %s", id, err, tt.code)
			}
			if got := logs.Len() > 0; got != tt.logged {
				t.Errorf("logged %v, want %v:\n%s", got, tt.logged, logs.String())
			}
		})
	}
}

// Config.Authorize runs for every call of an agent before the token's
// capabilities claim and the grants are checked: its *agentcap.Error is
// the answer, even where the grants would refuse too. It sees the
// identity Verify returned and the call as the executor built it.
func TestNewAuthorizeRunsFirst(t *testing.T) {
	w := newLCWorld(t)
	refusal := agentcap.NewError(agentcap.CodeUnauthorized, "not on a holiday")
	type seen struct {
		id   *auth.Identity
		call *auth.Call
	}
	var calls []seen
	refuse := map[string]bool{}
	v := w.location(t, agentauth.Config{Authorize: func(_ context.Context, id *auth.Identity, call *auth.Call) error {
		calls = append(calls, seen{id, call})
		if refuse[call.Capability] {
			return refusal
		}
		return nil
	}})
	id, err := verify(v, w.own.Token(agentauthtest.Token{Audience: htAudience, Capabilities: []string{"pay", "public_info"}}), false)
	if err != nil {
		t.Fatal(err)
	}
	bob := map[string]json.RawMessage{"to": json.RawMessage(`"bob"`)}
	tests := []struct {
		name   string
		refuse bool
		call   *auth.Call
		want   agentcap.Code
	}{
		{"granted, Authorize passes", false, &auth.Call{Capability: "pay", RequiredConstraints: []string{"to"}, Arguments: bob}, ""},
		{"granted, Authorize refuses", true, &auth.Call{Capability: "pay", RequiredConstraints: []string{"to"}, Arguments: bob}, refusal.Code},
		{"no grant, Authorize passes", false, &auth.Call{Capability: "public_info"}, agentcap.CodeCapabilityNotGranted},
		{"no grant, Authorize refuses", true, &auth.Call{Capability: "public_info"}, refusal.Code},
		{"outside the token's claim, Authorize passes", false, &auth.Call{Capability: "boom"}, agentcap.CodeCapabilityNotGranted},
		{"outside the token's claim, Authorize refuses", true, &auth.Call{Capability: "boom"}, refusal.Code},
		{"constraint violated, Authorize refuses", true, &auth.Call{Capability: "pay", RequiredConstraints: []string{"to"},
			Arguments: map[string]json.RawMessage{"to": json.RawMessage(`"mallory"`)}}, refusal.Code},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls = nil
			refuse = map[string]bool{tt.call.Capability: tt.refuse}
			err := id.Authorizer.Authorize(context.Background(), tt.call)
			if got := agentcap.CodeOf(err); got != tt.want {
				t.Fatalf("Authorize: %v, want %q", err, tt.want)
			}
			if tt.refuse && agentcap.As(err) != refusal {
				t.Errorf("Authorize returned %#v, not Config.Authorize's error", err)
			}
			if len(calls) != 1 || calls[0].id != id || calls[0].call != tt.call {
				t.Errorf("Config.Authorize saw %+v, want the identity and the call once", calls)
			}
		})
	}

	// Through the executor, Config.Authorize sees the capability's
	// required constraints, the raw arguments and the decoded input.
	calls = nil
	refuse = map[string]bool{}
	id, err = verify(v, w.own.Token(agentauthtest.Token{Audience: htAudience}), false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := htExecutor(t).Execute(context.Background(), "pay", id, []byte(`{"to":"bob","amount":5,"currency":"usd"}`))
	if err != nil || string(out) != `{"to":"bob","amount":5,"user":"user_bob"}` {
		t.Fatalf("Execute: %s, %v", out, err)
	}
	if len(calls) != 1 || calls[0].id != id {
		t.Fatalf("Config.Authorize saw %+v", calls)
	}
	c := calls[0].call
	in, ok := c.Input.(payIn)
	if c.Capability != "pay" || !cmp.Equal(c.RequiredConstraints, []string{"to"}) || string(c.Arguments["currency"]) != `"usd"` ||
		!ok || in.Currency != "USD" || in.To != "bob" {
		t.Errorf("Config.Authorize saw the call %+v (input %#v)", c, c.Input)
	}
}

// A grant the server cannot read refuses the call with a redacted
// internal error, and its fault is logged with the agent and capability.
func TestNewAuthorizeLogsBrokenGrants(t *testing.T) {
	w := newLCWorld(t)
	var logs bytes.Buffer
	v := w.location(t, agentauth.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	id, err := verify(v, w.malformed.Token(agentauthtest.Token{Audience: htAudience}), false)
	if err != nil {
		t.Fatal(err)
	}
	err = id.Authorizer.Authorize(context.Background(), &auth.Call{Capability: "pay", RequiredConstraints: []string{"to"},
		Arguments: map[string]json.RawMessage{"to": json.RawMessage(`"bob"`)}})
	if e := agentcap.As(err); e == nil || e.Code != agentcap.CodeInternalError || e.Message != "internal error" {
		t.Fatalf("Authorize: %v", err)
	}
	if l := logs.String(); !strings.Contains(l, "authorizing a call failed") || !strings.Contains(l, "agt_malformed") || !strings.Contains(l, "capability=pay") {
		t.Errorf("log:\n%s", l)
	}

	// A refusal in the protocol's words is the caller's business, not a
	// fault: it is not logged.
	logs.Reset()
	id, err = verify(v, w.own.Token(agentauthtest.Token{Audience: htAudience}), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := id.Authorizer.Authorize(context.Background(), &auth.Call{Capability: "public_info"}); agentcap.CodeOf(err) != agentcap.CodeCapabilityNotGranted {
		t.Fatalf("Authorize: %v", err)
	}
	if logs.Len() != 0 {
		t.Errorf("a refusal was logged:\n%s", logs.String())
	}
}

// sessionsOnly hides the Recheck of the *Verifier it wraps.
type sessionsOnly struct{ agentauth.SessionSource }

// An agent's identity rechecks its agent and host when the session
// source can; one that cannot lets the stream run.
func TestNewRecheck(t *testing.T) {
	w := newLCWorld(t)
	for _, rechecks := range []bool{true, false} {
		var sessions agentauth.SessionSource = w.agents
		if !rechecks {
			sessions = sessionsOnly{w.agents}
		}
		v := w.location(t, agentauth.Config{Sessions: sessions})
		id, err := verify(v, w.hostsUser.Token(agentauthtest.Token{Audience: htAudience}), false)
		if err != nil {
			t.Fatal(err)
		}
		if err := id.Authorizer.Recheck(context.Background()); err != nil {
			t.Fatalf("Recheck of an active agent: %v", err)
		}
		rec := w.hostsUser.Record()
		rec.Status = agentcap.StatusRevoked
		if err := w.dir.PutAgent(rec); err != nil {
			t.Fatal(err)
		}
		err = id.Authorizer.Recheck(context.Background())
		if want := map[bool]agentcap.Code{true: agentcap.CodeAgentRevoked, false: ""}[rechecks]; agentcap.CodeOf(err) != want {
			t.Errorf("rechecks %v: Recheck of a revoked agent: %v, want %q", rechecks, err, want)
		}
		if err := w.dir.PutAgent(w.hostsUser.Record()); err != nil {
			t.Fatal(err)
		}
	}
}

// A request without Bearer credentials is anonymous only where it lists
// or describes and Config.AllowAnonymousDiscovery says so: there, and only
// there, Verify returns no identity and no error. Bad credentials are
// never anonymous.
func TestNewAnonymousDiscovery(t *testing.T) {
	w := newLCWorld(t)
	tests := []struct {
		anonymous     bool
		authorization string
		discovery     bool
		want          agentcap.Code // "" for (nil, nil)
	}{
		{true, "", true, ""},
		{true, "Basic dXNlcjpwYXNz", true, ""},
		{true, "", false, agentcap.CodeAuthenticationRequired},
		{true, "Basic dXNlcjpwYXNz", false, agentcap.CodeAuthenticationRequired},
		{false, "", true, agentcap.CodeAuthenticationRequired},
		{false, "", false, agentcap.CodeAuthenticationRequired},
		{true, "Bearer", true, agentcap.CodeInvalidJWT},
		{true, "Bearer not-a-jwt", true, agentcap.CodeInvalidJWT},
		{true, "Bearer a.b.c d.e.f", true, agentcap.CodeInvalidJWT},
	}
	for _, tt := range tests {
		v := w.location(t, agentauth.Config{AllowAnonymousDiscovery: tt.anonymous})
		id, err := v.Verify(context.Background(), &auth.Request{Authorization: tt.authorization, Discovery: tt.discovery})
		if id != nil || agentcap.CodeOf(err) != tt.want {
			t.Errorf("anonymous %v, %q, discovery %v: %+v, %v; want %q", tt.anonymous, tt.authorization, tt.discovery, id, err, tt.want)
		}
		if tt.want == agentcap.CodeAuthenticationRequired && !errors.Is(err, auth.ErrNoCredentials) {
			t.Errorf("%q, discovery %v: %v is not auth.ErrNoCredentials", tt.authorization, tt.discovery, err)
		}
	}
}

// recordingSessions answers every token with one session and records the
// tokens it was given.
type recordingSessions struct {
	tokens []string
}

func (r *recordingSessions) Session(_ context.Context, token string) (*agentauth.Session, error) {
	r.tokens = append(r.tokens, token)
	return &agentauth.Session{
		Agent: &agentauth.Agent{ID: "agt_1", HostID: "hst_1", Mode: agentcap.ModeDelegated, Status: agentcap.StatusActive},
		Host:  &agentauth.Host{ID: "hst_1", Status: agentcap.StatusActive},
	}, nil
}

// Verify reads the Authorization header as RFC 6750 and RFC 9110 say: the
// Bearer scheme in any case, exactly one token. No Bearer credentials is
// authentication_required; a Bearer value without exactly one token is
// invalid_jwt, and never reaches the session source.
func TestNewReadsTheBearerToken(t *testing.T) {
	tests := []struct {
		header string
		token  string
		code   agentcap.Code // "" when the session source gets token
	}{
		{"Bearer abc.def.ghi", "abc.def.ghi", ""},
		{"bearer abc", "abc", ""},
		{"BEARER   abc  ", "abc", ""},
		{"", "", agentcap.CodeAuthenticationRequired},
		{"   ", "", agentcap.CodeAuthenticationRequired},
		{"Basic dXNlcjpwYXNz", "", agentcap.CodeAuthenticationRequired},
		{"Bearerabc", "", agentcap.CodeAuthenticationRequired},
		{"Bearer", "", agentcap.CodeInvalidJWT},
		{"Bearer    ", "", agentcap.CodeInvalidJWT},
		{"Bearer a b", "", agentcap.CodeInvalidJWT},
		{"Bearer a\tb", "", agentcap.CodeInvalidJWT},
	}
	for _, tt := range tests {
		src := &recordingSessions{}
		v, err := agentauth.New(agentauth.Config{Sessions: src, Issuer: htIssuer})
		if err != nil {
			t.Fatal(err)
		}
		id, err := v.Verify(context.Background(), &auth.Request{Authorization: tt.header})
		var seen string
		if len(src.tokens) > 0 {
			seen = src.tokens[0]
		}
		if agentcap.CodeOf(err) != tt.code || seen != tt.token || len(src.tokens) > 1 || (err == nil) != (id != nil) {
			t.Errorf("%q: the session source got %q, Verify %+v, %v; want %q, %q", tt.header, src.tokens, id, err, tt.token, tt.code)
		}
		if tt.code == agentcap.CodeInvalidJWT && agentcap.As(err).Message != "the Authorization header must be Bearer followed by an agent JWT" {
			t.Errorf("%q: message %q", tt.header, agentcap.As(err).Message)
		}
	}
}

// FuzzVerifyAuthorization feeds arbitrary Authorization values to an
// agent location that admits anonymous listings: it never panics; without
// Bearer credentials a listing is anonymous and anything else
// authentication_required; Bearer credentials that are not exactly one
// token are invalid_jwt; the session source gets that one token, free of
// blanks, and nothing otherwise.
func FuzzVerifyAuthorization(f *testing.F) {
	for _, s := range []string{"", "Bearer a.b.c", "bearer\tx", "Basic x", "Bearer a b", "Bearer \x00", "Bearer é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		src := &recordingSessions{}
		v, err := agentauth.New(agentauth.Config{Sessions: src, Issuer: htIssuer, AllowAnonymousDiscovery: true})
		if err != nil {
			t.Fatal(err)
		}
		// auth.BearerToken, fuzzed against a reference of its own, says
		// what the header holds.
		token, bearer := auth.BearerToken(header)
		for _, discovery := range []bool{false, true} {
			src.tokens = nil
			id, err := v.Verify(context.Background(), &auth.Request{Authorization: header, Discovery: discovery})
			switch {
			case !bearer && discovery:
				if id != nil || err != nil {
					t.Fatalf("%q: a listing without Bearer credentials: %+v, %v; want anonymous", header, id, err)
				}
			case !bearer:
				if id != nil || !errors.Is(err, auth.ErrNoCredentials) {
					t.Fatalf("%q: no Bearer credentials: %+v, %v", header, id, err)
				}
			case token == "":
				if id != nil || agentcap.CodeOf(err) != agentcap.CodeInvalidJWT {
					t.Fatalf("%q: malformed Bearer credentials: %+v, %v", header, id, err)
				}
			default:
				if err != nil || id == nil || id.AgentID != "agt_1" || len(src.tokens) != 1 || src.tokens[0] != token ||
					strings.ContainsAny(token, " \t") {
					t.Fatalf("%q: %+v, %v; the source got %q", header, id, err, src.tokens)
				}
			}
			if token == "" && len(src.tokens) != 0 {
				t.Fatalf("%q: the source got %q", header, src.tokens)
			}
		}
	})
}

func TestNewConfigErrors(t *testing.T) {
	src := failingSessions{}
	tests := []struct {
		name string
		cfg  agentauth.Config
	}{
		{"no sessions", agentauth.Config{Issuer: htIssuer}},
		{"no issuer", agentauth.Config{Sessions: src}},
		{"relative issuer", agentauth.Config{Sessions: src, Issuer: "/bank"}},
		{"ftp issuer", agentauth.Config{Sessions: src, Issuer: "ftp://bank.test"}},
		{"issuer with credentials", agentauth.Config{Sessions: src, Issuer: "https://u:p@bank.test"}},
		{"issuer with a quote", agentauth.Config{Sessions: src, Issuer: `https://bank.test"x`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if v, err := agentauth.New(tt.cfg); err == nil || v != nil {
				t.Errorf("New accepted the configuration: %v", v)
			}
		})
	}
}

// The verifier's challenge (auth.ChallengeOf, which every transport sends
// with a 401) points at the discovery document of the issuer's origin.
func TestNewChallenge(t *testing.T) {
	tests := map[string]string{
		htIssuer:                          htChallenge,
		"http://127.0.0.1:8080/api/auth/": `AgentAuth discovery="http://127.0.0.1:8080/.well-known/agent-configuration"`,
		"https://bank.test/":              `AgentAuth discovery="https://bank.test/.well-known/agent-configuration"`,
		"https://bank.test:8443/x?y=z":    `AgentAuth discovery="https://bank.test:8443/.well-known/agent-configuration"`,
	}
	for issuer, want := range tests {
		v, err := agentauth.New(agentauth.Config{Sessions: failingSessions{}, Issuer: issuer})
		if err != nil {
			t.Fatal(err)
		}
		if got := auth.ChallengeOf(v); got != want {
			t.Errorf("%s: challenge %q, want %q", issuer, got, want)
		}
	}
}
