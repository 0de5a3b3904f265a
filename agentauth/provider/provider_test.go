package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/ratelimit"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/core"
)

func TestDiscovery(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/.well-known/agent-configuration"} {
		r := e.do(http.MethodGet, path, "", nil)
		if r.status != http.StatusOK || r.header.Get("Cache-Control") == "" {
			t.Fatalf("%s: %d %q", path, r.status, r.header.Get("Cache-Control"))
		}
		eps, _ := r.body["endpoints"].(map[string]any)
		want := map[string]any{
			"register": "/agent/register", "status": "/agent/status", "request_capability": "/agent/request-capability",
			"revoke": "/agent/revoke", "revoke_host": "/host/revoke", "reactivate": "/agent/reactivate",
			"rotate_key": "/agent/rotate-key", "rotate_host_key": "/host/rotate-key", "introspect": "/agent/introspect",
			"capabilities": "/capability/list", "describe_capability": "/capability/describe", "execute": "/capability/execute",
		}
		if diff := cmp.Diff(want, eps); diff != "" {
			t.Errorf("endpoints (-want +got):\n%s", diff)
		}
		if r.str("issuer") != e.url || r.str("default_location") != e.url+"/capability/execute" {
			t.Errorf("issuer %v default_location %v", r.body["issuer"], r.body["default_location"])
		}
	}
}

func TestHostJWTVerification(t *testing.T) {
	e := newEnv(t)
	h, a := newKey(t), newKey(t)
	other := newKey(t)
	body := map[string]any{"name": "x"}
	replayed := e.hostToken(h, a)
	if r := e.do(http.MethodPost, provider.PathRegister, replayed, body); r.status != http.StatusOK {
		t.Fatalf("first registration: %d %s", r.status, r.raw)
	}
	tests := []struct {
		name   string
		token  string
		status int
		code   agentcap.Code
	}{
		{"no token", "", 401, agentcap.CodeAuthenticationRequired},
		{"agent typ", e.hostToken(h, newKey(t), func(hd, _ map[string]any) { hd["typ"] = "agent+jwt" }), 401, agentcap.CodeInvalidJWT},
		{"no typ", e.hostToken(h, newKey(t), func(hd, _ map[string]any) { delete(hd, "typ") }), 401, agentcap.CodeInvalidJWT},
		{"alg none", e.hostToken(h, newKey(t), func(hd, _ map[string]any) { hd["alg"] = "none" }), 401, agentcap.CodeInvalidJWT},
		{"jwk header", e.hostToken(h, newKey(t), func(hd, _ map[string]any) { hd["jwk"] = h.jwk() }), 401, agentcap.CodeInvalidJWT},
		{"wrong aud", e.hostToken(h, newKey(t), func(_, c map[string]any) { c["aud"] = "https://elsewhere.example" }), 401, agentcap.CodeInvalidJWT},
		{"aud array with issuer", e.hostToken(newKey(t), newKey(t), func(_, c map[string]any) { c["aud"] = []string{"x", e.url} }), 200, ""},
		{"new host iss not its thumbprint", e.hostToken(newKey(t), newKey(t), func(_, c map[string]any) { c["iss"] = other.thumbprint() }), 401, agentcap.CodeInvalidJWT},
		{"new host key of another", e.hostToken(h, newKey(t), func(_, c map[string]any) {
			c["iss"] = other.thumbprint()
			c["host_public_key"] = other.jwk()
		}), 401, agentcap.CodeInvalidJWT},
		{"expired", e.hostToken(h, newKey(t), func(_, c map[string]any) {
			c["iat"] = e.clock.Now().Add(-2 * time.Minute).Unix()
			c["exp"] = e.clock.Now().Add(-time.Minute).Unix()
		}), 401, agentcap.CodeInvalidJWT},
		{"exp passed a second ago: no skew on exp", e.hostToken(h, newKey(t), func(_, c map[string]any) {
			c["iat"] = e.clock.Now().Add(-30 * time.Second).Unix()
			c["exp"] = e.clock.Now().Add(-time.Second).Unix()
		}), 401, agentcap.CodeInvalidJWT},
		{"issued in the future", e.hostToken(h, newKey(t), func(_, c map[string]any) {
			c["iat"] = e.clock.Now().Add(time.Minute).Unix()
			c["exp"] = e.clock.Now().Add(2 * time.Minute).Unix()
		}), 401, agentcap.CodeInvalidJWT},
		{"lifetime too long", e.hostToken(h, newKey(t), func(_, c map[string]any) { c["exp"] = e.clock.Now().Add(time.Hour).Unix() }), 401, agentcap.CodeInvalidJWT},
		{"no jti", e.hostToken(h, newKey(t), func(_, c map[string]any) { delete(c, "jti") }), 401, agentcap.CodeInvalidJWT},
		{"iss not a string", e.hostToken(h, newKey(t), func(_, c map[string]any) { c["iss"] = 5 }), 401, agentcap.CodeInvalidJWT},
		{"replayed", replayed, 401, agentcap.CodeInvalidJWT},
		{"bad signature", func() string {
			tok := e.hostToken(h, newKey(t))
			return tok[:len(tok)-4] + "AAAA"
		}(), 401, agentcap.CodeInvalidJWT},
		{"signed by another key", other.sign(map[string]any{"alg": "EdDSA", "typ": "host+jwt"}, map[string]any{
			"iss": h.thumbprint(), "aud": e.url, "iat": e.clock.Now().Unix(), "exp": e.clock.Now().Unix() + 60, "jti": nextJTI(),
			"agent_public_key": newKey(t).jwk(),
		}), 401, agentcap.CodeInvalidJWT},
		{"garbage", "a.b.c", 401, agentcap.CodeInvalidJWT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(http.MethodPost, provider.PathRegister, tt.token, body)
			if r.status != tt.status || (tt.code != "" && r.code() != tt.code) {
				t.Errorf("%d %s, want %d %s", r.status, r.raw, tt.status, tt.code)
			}
			if r.status == 401 && r.header.Get("WWW-Authenticate") == "" {
				t.Error("401 without a challenge")
			}
		})
	}
}

func TestRegistrationErrors(t *testing.T) {
	e := newEnv(t, func(c *provider.Config) { c.Modes = []string{agentcap.ModeDelegated} })
	tests := []struct {
		name   string
		body   any
		status int
		code   agentcap.Code
		check  func(t *testing.T, r response)
	}{
		{"unsupported mode", map[string]any{"name": "a", "mode": "autonomous"}, 400, agentcap.CodeUnsupportedMode, nil},
		{"unknown capabilities named", map[string]any{"name": "a", "capabilities": []any{"echo", "nope", map[string]any{"name": "nada"}}}, 400, agentcap.CodeInvalidCapabilities,
			func(t *testing.T, r response) {
				if diff := cmp.Diff([]any{"nope", "nada"}, r.body["invalid_capabilities"]); diff != "" {
					t.Errorf("invalid_capabilities (-want +got):\n%s", diff)
				}
			}},
		{"unknown operator", map[string]any{"name": "a", "capabilities": []any{map[string]any{"name": "transfer", "constraints": map[string]any{"amount": map[string]any{"lte": 5}}}}}, 400, agentcap.CodeUnknownConstraintOperator,
			func(t *testing.T, r response) {
				if diff := cmp.Diff([]any{"lte"}, r.body["unknown_operators"]); diff != "" {
					t.Errorf("unknown_operators (-want +got):\n%s", diff)
				}
			}},
		{"malformed constraint", map[string]any{"name": "a", "capabilities": []any{map[string]any{"name": "transfer", "constraints": map[string]any{"amount": map[string]any{"max": "x"}}}}}, 400, agentcap.CodeInvalidRequest, nil},
		{"no name", map[string]any{"mode": "delegated"}, 400, agentcap.CodeInvalidRequest, nil},
		{"name of the wrong case", map[string]any{"Name": "a"}, 400, agentcap.CodeInvalidRequest, nil},
		{"duplicate member", []byte(`{"name":"a","name":"b"}`), 400, agentcap.CodeInvalidRequest, nil},
		{"capability twice", map[string]any{"name": "a", "capabilities": []any{"echo", "echo"}}, 400, agentcap.CodeInvalidRequest, nil},
		{"not an object", []byte(`[1]`), 400, agentcap.CodeInvalidRequest, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(http.MethodPost, provider.PathRegister, e.hostToken(newKey(t), newKey(t)), tt.body)
			if r.status != tt.status || r.code() != tt.code {
				t.Fatalf("%d %s, want %d %s", r.status, r.raw, tt.status, tt.code)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
	t.Run("agent key equal to the host key", func(t *testing.T) {
		h := newKey(t)
		r := e.register(h, h, nil)
		if r.status != 400 {
			t.Errorf("%d %s", r.status, r.raw)
		}
	})
	t.Run("no agent key", func(t *testing.T) {
		r := e.do(http.MethodPost, provider.PathRegister, e.hostToken(newKey(t), nil), map[string]any{"name": "a"})
		if r.status != 400 {
			t.Errorf("%d %s", r.status, r.raw)
		}
	})
	t.Run("agent key of another type", func(t *testing.T) {
		r := e.do(http.MethodPost, provider.PathRegister, e.hostToken(newKey(t), nil, func(_, c map[string]any) {
			c["agent_public_key"] = map[string]string{"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"}
		}), map[string]any{"name": "a"})
		if r.status != 400 || r.code() != agentcap.CodeUnsupportedAlgorithm {
			t.Errorf("%d %s", r.status, r.raw)
		}
	})
}

func TestDelegatedRegistrationFlow(t *testing.T) {
	e := newEnv(t)
	h, a := newKey(t), newKey(t)
	body := map[string]any{"name": "assistant", "host_name": "laptop", "reason": "check things",
		"capabilities": []any{"echo", "check_balance", map[string]any{"name": "transfer", "constraints": map[string]any{"amount": map[string]any{"max": 100}}}}}
	r := e.register(h, a, body)
	if r.status != 200 || r.str("status") != "pending" {
		t.Fatalf("register: %d %s", r.status, r.raw)
	}
	ap := r.body["approval"].(map[string]any)
	if ap["method"] != "device_authorization" || ap["verification_uri"] != e.url+"/approve" || ap["expires_in"] != float64(600) || ap["interval"] != float64(2) {
		t.Errorf("approval %v", ap)
	}
	if diff := cmp.Diff(map[string]string{"echo": "pending", "check_balance": "pending", "transfer": "pending"}, grants(r)); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}
	agentID := r.str("agent_id")

	// A retry with the same keys while pending is the same agent with a
	// fresh code.
	again := e.register(h, a, body)
	if again.status != 200 || again.str("agent_id") != agentID {
		t.Fatalf("retry: %d %s", again.status, again.raw)
	}
	code2 := again.body["approval"].(map[string]any)["user_code"]
	if code2 == ap["user_code"] {
		t.Error("the retry reused the code")
	}

	// Status polls: the first is fine, an immediate second is slow_down.
	st := e.do(http.MethodGet, provider.PathStatus+"?agent_id="+agentID, e.hostToken(h, nil), nil)
	if st.status != 200 || st.str("status") != "pending" {
		t.Fatalf("status: %d %s", st.status, st.raw)
	}
	if st := e.do(http.MethodGet, provider.PathStatus+"?agent_id="+agentID, e.hostToken(h, nil), nil); st.status != 400 || st.code() != agentcap.CodeSlowDown {
		t.Errorf("fast poll: %d %s", st.status, st.raw)
	}
	e.clock.Advance(time.Second)
	if st := e.do(http.MethodPost, provider.PathApprovalPoll, e.hostToken(h, nil), map[string]any{"agent_id": agentID}); st.status != 400 || st.code() != agentcap.CodeAuthorizationPending {
		t.Errorf("RFC 8628 poll: %d %s", st.status, st.raw)
	}

	// The transfer needs presence: refused without it.
	err := e.p.Decide(context.Background(), provider.Decision{UserCode: code2.(string), UserID: "alice"})
	if !errors.Is(err, provider.ErrPresenceRequired) {
		t.Fatalf("decide without presence: %v", err)
	}
	// Allow a subset.
	if err := e.p.Decide(context.Background(), provider.Decision{UserCode: code2.(string), UserID: "alice", Capabilities: []string{"echo", "check_balance"}}); err != nil {
		t.Fatal(err)
	}
	// The first code is closed by the decision.
	if _, err := e.p.PendingApproval(context.Background(), ap["user_code"].(string)); !errors.Is(err, provider.ErrApprovalClosed) {
		t.Errorf("sibling approval: %v", err)
	}
	e.clock.Advance(2 * time.Second)
	st = e.do(http.MethodGet, provider.PathStatus+"?agent_id="+agentID, e.hostToken(h, nil), nil)
	if st.status != 200 || st.str("status") != "active" || st.str("user_id") != "alice" {
		t.Fatalf("status after approval: %d %s", st.status, st.raw)
	}
	if diff := cmp.Diff(map[string]string{"echo": "active", "check_balance": "active", "transfer": "denied"}, grants(st)); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}
	// The host is now active and linked: a second agent of it gets the
	// host's defaults without asking, and asks for the rest.
	b := newKey(t)
	r2 := e.register(h, b, map[string]any{"name": "second", "capabilities": []any{"echo"}})
	if r2.status != 200 || r2.str("status") != "active" || r2.body["approval"] != nil {
		t.Fatalf("second agent: %d %s", r2.status, r2.raw)
	}
	r3 := e.register(h, newKey(t), map[string]any{"name": "third", "capabilities": []any{"echo", "check_balance"}})
	if r3.str("status") != "pending" {
		t.Errorf("third agent: %s", r3.raw)
	}
	// Registering an active agent's key again is agent_exists.
	if r := e.register(h, b, map[string]any{"name": "again"}); r.status != 409 || r.code() != agentcap.CodeAgentExists {
		t.Errorf("re-register: %d %s", r.status, r.raw)
	}
	// Bob cannot approve for alice's host.
	code3 := r3.body["approval"].(map[string]any)["user_code"].(string)
	if err := e.p.Decide(context.Background(), provider.Decision{UserCode: code3, UserID: "bob"}); !errors.Is(err, provider.ErrWrongUser) {
		t.Errorf("bob deciding for alice: %v", err)
	}
}

func TestDenyRejects(t *testing.T) {
	e := newEnv(t)
	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "x", "capabilities": []any{"echo"}})
	code := r.body["approval"].(map[string]any)["user_code"].(string)
	if err := e.p.Decide(context.Background(), provider.Decision{UserCode: code, UserID: "alice", Deny: true, Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	st := e.do(http.MethodGet, provider.PathStatus+"?agent_id="+r.str("agent_id"), e.hostToken(h, nil), nil)
	if st.str("status") != "rejected" || grants(st)["echo"] != "denied" {
		t.Errorf("after deny: %s", st.raw)
	}
	if err := e.p.Decide(context.Background(), provider.Decision{UserCode: code, UserID: "alice"}); !errors.Is(err, provider.ErrApprovalClosed) {
		t.Errorf("deciding twice: %v", err)
	}
}

func TestConcurrentDecisionsOneWinner(t *testing.T) {
	e := newEnv(t)
	r := e.register(newKey(t), newKey(t), map[string]any{"name": "x", "capabilities": []any{"echo"}})
	code := r.body["approval"].(map[string]any)["user_code"].(string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := e.p.Decide(context.Background(), provider.Decision{UserCode: code, UserID: "alice", Deny: i%2 == 0})
			if err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if !errors.Is(err, provider.ErrApprovalClosed) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d decisions won", wins)
	}
}

func TestAutonomousPolicy(t *testing.T) {
	allow := true
	e := newEnv(t, func(c *provider.Config) {
		c.Policy.AllowAutonomous = func(context.Context, *store.Host) bool { return allow }
	})
	r := e.register(newKey(t), newKey(t), map[string]any{"name": "worker", "mode": "autonomous", "capabilities": []any{"echo", "check_balance"}})
	if r.status != 200 || r.str("status") != "active" || r.body["approval"] != nil {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if diff := cmp.Diff(map[string]string{"echo": "active", "check_balance": "denied"}, grants(r)); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}
	allow = false
	if r := e.register(newKey(t), newKey(t), map[string]any{"name": "worker", "mode": "autonomous"}); r.status != 403 || r.code() != agentcap.CodeUnauthorized {
		t.Errorf("refused autonomous: %d %s", r.status, r.raw)
	}
}

func TestConstraintsNarrowedNeverWidened(t *testing.T) {
	e := newEnv(t, func(c *provider.Config) {
		c.Policy.Constraints = func(_ context.Context, _ *store.Agent, def *core.Definition) map[string]json.RawMessage {
			if def.Name() == "transfer" {
				return map[string]json.RawMessage{"amount": json.RawMessage(`{"max":100}`)}
			}
			return nil
		}
	})
	tests := []struct {
		name     string
		proposed map[string]any
		want     map[string]any
	}{
		{"wider proposal narrowed", map[string]any{"amount": map[string]any{"max": 500}, "currency": map[string]any{"in": []string{"EUR"}}},
			map[string]any{"amount": map[string]any{"max": float64(100)}, "currency": map[string]any{"in": []any{"EUR"}}}},
		{"narrower proposal kept", map[string]any{"amount": map[string]any{"max": 20}}, map[string]any{"amount": map[string]any{"max": float64(20)}}},
		{"no proposal gets the server's", nil, map[string]any{"amount": map[string]any{"max": float64(100)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := map[string]any{"name": "transfer"}
			if tt.proposed != nil {
				c["constraints"] = tt.proposed
			}
			h, a := newKey(t), newKey(t)
			r := e.register(h, a, map[string]any{"name": "a", "capabilities": []any{c}})
			e.approve(r, "alice", nil)
			e.clock.Advance(2 * time.Second)
			st := e.do(http.MethodGet, provider.PathStatus+"?agent_id="+r.str("agent_id"), e.hostToken(h, nil), nil)
			gs := st.body["agent_capability_grants"].([]any)
			if diff := cmp.Diff(tt.want, gs[0].(map[string]any)["constraints"]); diff != "" {
				t.Errorf("granted constraints (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("contradiction refused", func(t *testing.T) {
		r := e.register(newKey(t), newKey(t), map[string]any{"name": "a", "capabilities": []any{
			map[string]any{"name": "transfer", "constraints": map[string]any{"amount": 500}}}})
		if r.status != 400 || r.code() != agentcap.CodeInvalidRequest {
			t.Errorf("%d %s", r.status, r.raw)
		}
	})
}

func TestNarrow(t *testing.T) {
	raw := func(s string) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	tests := []struct {
		a, b, want string
		fails      bool
	}{
		{a: `{"x":{"max":10}}`, b: `{"x":{"max":5}}`, want: `{"x":{"max":5}}`},
		{a: `{"x":{"min":1}}`, b: `{"x":{"min":3,"max":9}}`, want: `{"x":{"max":9,"min":3}}`},
		{a: `{"x":{"in":["a","b","c"]}}`, b: `{"x":{"in":["c","a","z"]}}`, want: `{"x":{"in":["a","c"]}}`},
		{a: `{"x":{"not_in":["a"]}}`, b: `{"x":{"not_in":["b","a"]}}`, want: `{"x":{"not_in":["a","b"]}}`},
		{a: `{"x":7}`, b: `{"x":{"max":10}}`, want: `{"x":7}`},
		{a: `{"x":{"max":10}}`, b: `{"y":"EUR"}`, want: `{"x":{"max":10},"y":"EUR"}`},
		{a: `{"x":70}`, b: `{"x":{"max":10}}`, fails: true},
		{a: `{"x":"a"}`, b: `{"x":"b"}`, fails: true},
		{a: `{"x":{"lt":1}}`, b: `{}`, fails: true},
	}
	for _, tt := range tests {
		got, err := provider.Narrow(raw(tt.a), raw(tt.b))
		if tt.fails {
			if err == nil {
				t.Errorf("Narrow(%s, %s) = %v, want an error", tt.a, tt.b, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("Narrow(%s, %s): %v", tt.a, tt.b, err)
			continue
		}
		b, _ := json.Marshal(got)
		if diff := cmp.Diff(tt.want, string(b)); diff != "" {
			t.Errorf("Narrow(%s, %s) (-want +got):\n%s", tt.a, tt.b, diff)
		}
	}
}

func TestRevokeHostCascades(t *testing.T) {
	e := newEnv(t)
	h := newKey(t)
	r := e.register(h, newKey(t), map[string]any{"name": "a", "capabilities": []any{"echo"}})
	e.approve(r, "alice", nil)
	r2 := e.register(h, newKey(t), map[string]any{"name": "b", "capabilities": []any{"echo"}})
	if r2.str("status") != "active" {
		t.Fatalf("second agent %s", r2.raw)
	}
	rv := e.do(http.MethodPost, provider.PathRevokeHost, e.hostToken(h, nil), nil)
	if rv.status != 200 || rv.body["agents_revoked"] != float64(2) || rv.str("status") != "revoked" {
		t.Fatalf("revoke host: %d %s", rv.status, rv.raw)
	}
	if r := e.do(http.MethodGet, provider.PathStatus+"?agent_id="+r.str("agent_id"), e.hostToken(h, nil), nil); r.status != 403 || r.code() != agentcap.CodeHostRevoked {
		t.Errorf("status after host revocation: %d %s", r.status, r.raw)
	}
}

func TestRevokeAndOwnership(t *testing.T) {
	e := newEnv(t)
	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "a", "capabilities": []any{"echo"}})
	id := r.str("agent_id")
	if r := e.do(http.MethodPost, provider.PathRevoke, e.hostToken(newKey(t), newKey(t)), map[string]any{"agent_id": id}); r.status != 401 {
		t.Errorf("unknown host revoking: %d %s", r.status, r.raw)
	}
	other := newKey(t)
	e.approve(e.register(other, newKey(t), map[string]any{"name": "o"}), "bob", nil)
	if r := e.do(http.MethodPost, provider.PathRevoke, e.hostToken(other, nil), map[string]any{"agent_id": id}); r.status != 403 || r.code() != agentcap.CodeUnauthorized {
		t.Errorf("another host revoking: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodPost, provider.PathRevoke, e.hostToken(h, nil), map[string]any{"agent_id": "agt_nope"}); r.status != 404 || r.code() != agentcap.CodeAgentNotFound {
		t.Errorf("unknown agent: %d %s", r.status, r.raw)
	}
	for range 2 {
		if r := e.do(http.MethodPost, provider.PathRevoke, e.hostToken(h, nil), map[string]any{"agent_id": id}); r.status != 200 || r.str("status") != "revoked" {
			t.Errorf("revoke: %d %s", r.status, r.raw)
		}
	}
}

func TestReactivate(t *testing.T) {
	e := newEnv(t, func(c *provider.Config) {
		c.Lifetimes = store.Policy{SessionTTL: time.Hour, AbsoluteLifetime: 24 * time.Hour}
	})
	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "a", "capabilities": []any{"echo", "check_balance"}})
	e.approve(r, "alice", nil)
	id := r.str("agent_id")
	tok := e.agentToken(a, id, e.url+"/capability/execute", nil)
	if r := e.do(http.MethodPost, "/capability/execute", tok, map[string]any{"capability": "check_balance", "arguments": map[string]any{"message": "x"}}); r.status != 200 {
		t.Fatalf("execute: %d %s", r.status, r.raw)
	}
	e.clock.Advance(2 * time.Hour)
	if r := e.do(http.MethodPost, "/capability/execute", e.agentToken(a, id, e.url+"/capability/execute", nil), map[string]any{"capability": "echo", "arguments": map[string]any{"message": "x"}}); r.status != 403 || r.code() != agentcap.CodeAgentExpired {
		t.Fatalf("execute when idle too long: %d %s", r.status, r.raw)
	}
	rr := e.do(http.MethodPost, provider.PathReactivate, e.hostToken(h, nil), map[string]any{"agent_id": id})
	if rr.status != 200 || rr.str("status") != "active" {
		t.Fatalf("reactivate: %d %s", rr.status, rr.raw)
	}
	// Capabilities decay to the host defaults: check_balance is gone.
	if diff := cmp.Diff(map[string]string{"echo": "active"}, grants(rr)); diff != "" {
		t.Errorf("grants after reactivation (-want +got):\n%s", diff)
	}
	// Reactivating an active agent is a no-op.
	if r := e.do(http.MethodPost, provider.PathReactivate, e.hostToken(h, nil), map[string]any{"agent_id": id}); r.status != 200 || r.str("status") != "active" {
		t.Errorf("no-op: %d %s", r.status, r.raw)
	}
	e.clock.Advance(2 * time.Hour)
	e.clock.Advance(21 * time.Hour)
	if r := e.do(http.MethodPost, provider.PathReactivate, e.hostToken(h, nil), map[string]any{"agent_id": id}); r.status != 403 || r.code() != agentcap.CodeAbsoluteLifetimeExceeded {
		t.Errorf("past the absolute lifetime: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodPost, provider.PathReactivate, e.hostToken(h, nil), map[string]any{"agent_id": id}); r.status != 403 || r.code() != agentcap.CodeAgentRevoked {
		t.Errorf("after the absolute lifetime: %d %s", r.status, r.raw)
	}
}

func TestKeyRotation(t *testing.T) {
	e := newEnv(t)
	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "a", "capabilities": []any{"echo"}})
	e.approve(r, "alice", nil)
	id := r.str("agent_id")
	a2 := newKey(t)
	if r := e.do(http.MethodPost, provider.PathRotateKey, e.hostToken(h, nil), map[string]any{"agent_id": id, "public_key": a2.jwk()}); r.status != 200 {
		t.Fatalf("rotate agent key: %d %s", r.status, r.raw)
	}
	exec := func(k *key) int {
		return e.do(http.MethodPost, "/capability/execute", e.agentToken(k, id, e.url+"/capability/execute", nil), map[string]any{"capability": "echo", "arguments": map[string]any{"message": "x"}}).status
	}
	if exec(a) != 401 || exec(a2) != 200 {
		t.Error("the old agent key still works, or the new one does not")
	}
	h2 := newKey(t)
	if r := e.do(http.MethodPost, provider.PathRotateHostKey, e.hostToken(h, nil), map[string]any{"public_key": h2.jwk()}); r.status != 200 || r.str("status") != "active" {
		t.Fatalf("rotate host key: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodGet, provider.PathStatus+"?agent_id="+id, e.hostToken(h, nil), nil); r.status != 401 {
		t.Errorf("old host key: %d", r.status)
	}
	if r := e.do(http.MethodGet, provider.PathStatus+"?agent_id="+id, e.hostToken(h2, nil), nil); r.status != 200 {
		t.Errorf("new host key: %d %s", r.status, r.raw)
	}
}

func TestRequestCapability(t *testing.T) {
	e := newEnv(t)
	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "a", "capabilities": []any{"echo"}})
	e.approve(r, "alice", nil)
	id := r.str("agent_id")
	req := func(aud string, body any) response {
		return e.do(http.MethodPost, provider.PathRequestCapability, e.agentToken(a, id, aud, nil), body)
	}
	if r := req(e.url+"/capability/execute", map[string]any{"capabilities": []any{"check_balance"}}); r.status != 401 {
		t.Errorf("token for the location: %d %s", r.status, r.raw)
	}
	if r := req(e.url, map[string]any{"capabilities": []any{"echo"}}); r.status != 409 || r.code() != agentcap.CodeAlreadyGranted {
		t.Errorf("already granted: %d %s", r.status, r.raw)
	}
	if r := req(e.url, map[string]any{"capabilities": []any{"ghost"}}); r.status != 400 || r.code() != agentcap.CodeInvalidCapabilities {
		t.Errorf("unknown: %d %s", r.status, r.raw)
	}
	rc := req(e.url, map[string]any{"capabilities": []any{map[string]any{"name": "transfer", "constraints": map[string]any{"amount": map[string]any{"max": 50}}}}, "reason": "pay rent"})
	if rc.status != 200 || rc.body["approval"] == nil || grants(rc)["transfer"] != "pending" {
		t.Fatalf("request: %d %s", rc.status, rc.raw)
	}
	e.approve(rc, "alice", nil)
	exec := func(amount float64) response {
		return e.do(http.MethodPost, "/capability/execute", e.agentToken(a, id, e.url+"/capability/execute", nil),
			map[string]any{"capability": "transfer", "arguments": map[string]any{"amount": amount, "currency": "EUR"}})
	}
	if r := exec(50); r.status != 200 {
		t.Errorf("within the constraint: %d %s", r.status, r.raw)
	}
	if r := exec(51); r.status != 403 || r.code() != agentcap.CodeConstraintViolated {
		t.Errorf("beyond it: %d %s", r.status, r.raw)
	}
	// An execution token must name the capability's location.
	if r := e.do(http.MethodPost, "/capability/execute", e.agentToken(a, id, e.url, nil),
		map[string]any{"capability": "echo", "arguments": map[string]any{"message": "x"}}); r.status != 401 {
		t.Errorf("execution token for the issuer: %d %s", r.status, r.raw)
	}
}

func TestIntrospection(t *testing.T) {
	e := newEnv(t, func(c *provider.Config) { c.IntrospectionAuth = provider.BearerCredential("s3cret") })
	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "a", "capabilities": []any{"echo", "check_balance"}})
	e.approve(r, "alice", nil)
	id := r.str("agent_id")
	// The caller is told to authenticate with the one challenge of every
	// provider 401, as before the code of this answer became
	// authentication_required.
	if r := e.do(http.MethodPost, provider.PathIntrospect, "wrong", map[string]any{"token": "x"}); r.status != 401 ||
		r.code() != agentcap.CodeAuthenticationRequired || !slices.Equal(r.header.Values("WWW-Authenticate"), []string{e.p.Challenge()}) {
		t.Errorf("wrong credential: %d %q %s", r.status, r.header.Values("WWW-Authenticate"), r.raw)
	}
	tok := e.agentToken(a, id, e.url+"/capability/execute", []string{"echo"})
	got := e.do(http.MethodPost, provider.PathIntrospect, "s3cret", map[string]any{"token": tok})
	want := map[string]any{"active": true, "agent_id": id, "host_id": r.str("host_id"), "user_id": "alice", "mode": "delegated",
		"agent_capability_grants": []any{map[string]any{"capability": "echo", "status": "active"}}}
	if diff := cmp.Diff(want, got.body); diff != "" {
		t.Errorf("introspection (-want +got):\n%s", diff)
	}
	if r := e.do(http.MethodPost, provider.PathIntrospect, "s3cret", map[string]any{"token": tok}); r.body["active"] != false {
		t.Errorf("replayed token: %s", r.raw)
	}
}

func TestRateLimits(t *testing.T) {
	e := newEnv(t, func(c *provider.Config) {
		c.RateLimits = provider.RateLimits{
			Limiter:       ratelimit.NewMemory(0),
			NewHostPerIP:  ratelimit.PerHour(2),
			PerCapability: map[string]ratelimit.Limit{"echo": ratelimit.PerHour(1)},
		}
	})
	for i := range 3 {
		r := e.register(newKey(t), newKey(t), nil)
		if i < 2 && r.status != 200 {
			t.Fatalf("registration %d: %d %s", i, r.status, r.raw)
		}
		if i == 2 && (r.status != 429 || r.code() != "rate_limited" || r.header.Get("Retry-After") == "") {
			t.Errorf("third new host: %d %s %q", r.status, r.raw, r.header.Get("Retry-After"))
		}
	}
}

func TestConcurrentRegistrationsOfANewHost(t *testing.T) {
	e := newEnv(t)
	h := newKey(t)
	const n = 8
	var wg sync.WaitGroup
	results := make([]response, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = e.register(h, newKey(t), map[string]any{"name": "a", "capabilities": []any{"echo"}})
		}()
	}
	wg.Wait()
	hosts, agents := map[string]bool{}, map[string]bool{}
	for _, r := range results {
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		hosts[r.str("host_id")] = true
		agents[r.str("agent_id")] = true
	}
	if len(hosts) != 1 || len(agents) != n {
		t.Errorf("%d hosts, %d agents", len(hosts), len(agents))
	}
}

func TestSweepDeletesStalePending(t *testing.T) {
	e := newEnv(t, func(c *provider.Config) { c.Lifetimes = store.Policy{PendingTTL: time.Hour} })
	h := newKey(t)
	r := e.register(h, newKey(t), nil)
	e.clock.Advance(2 * time.Hour)
	res, err := e.p.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.AgentsDeleted != 1 || res.HostsDeleted != 1 {
		t.Errorf("sweep %+v", res)
	}
	if _, err := e.st.GetAgent(context.Background(), r.str("agent_id")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("pending agent after the sweep: %v", err)
	}
}
