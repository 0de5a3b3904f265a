package agentauth_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/agentauth"
)

// itProvider is a loopback stand-in for a provider's introspect endpoint.
type itProvider struct {
	srv    *httptest.Server
	mu     sync.Mutex
	status int
	body   string
	reqs   []itRequest
}

type itRequest struct {
	Method, Path, ContentType, Credential string
	Body                                  map[string]any
}

func itNewProvider(t *testing.T) *itProvider {
	t.Helper()
	p := &itProvider{status: http.StatusOK}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		p.mu.Lock()
		p.reqs = append(p.reqs, itRequest{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("X-Provider-Key"), body})
		status, resp := p.status, p.body
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, resp)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *itProvider) respond(status int, body string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status, p.body = status, body
}

func (p *itProvider) requests() []itRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]itRequest(nil), p.reqs...)
}

func (p *itProvider) source(t *testing.T, mod func(*agentauth.IntrospectionConfig)) *agentauth.IntrospectionSource {
	t.Helper()
	cfg := agentauth.IntrospectionConfig{Endpoint: p.srv.URL + "/api/auth/agent/introspect", Header: "X-Provider-Key", Credential: "s3cret"}
	if mod != nil {
		mod(&cfg)
	}
	s, err := agentauth.NewIntrospectionSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// itToken mints an agent JWT at the current time, as the provider only
// sees real time.
func itToken(t testing.TB, mod func(map[string]any)) string {
	t.Helper()
	now := time.Now().Unix()
	c := map[string]any{"sub": "agt_1", "aud": vfAud, "iat": now, "exp": now + 60, "jti": "it-1", "capabilities": []string{"check_balance"}}
	if mod != nil {
		mod(c)
	}
	return vfMint(t, vfNewKey(t).priv, "", c)
}

const itActive = `{"active": true, "agent_id": "agt_1", "host_id": "hst_1", "user_id": "usr_1", "mode": "delegated",
  "agent_capability_grants": [{"capability": "check_balance", "status": "active"}, {"capability": "transfer", "status": "pending"}],
  "expires_at": "2999-01-01T00:00:00Z", "scope_hint": "ignored"}`

func TestIntrospectionSession(t *testing.T) {
	p := itNewProvider(t)
	p.respond(200, itActive)
	tok := itToken(t, nil)
	sess, err := p.source(t, nil).Session(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	want := &agentauth.Session{
		Agent: &agentauth.Agent{ID: "agt_1", HostID: "hst_1", UserID: "usr_1", Mode: "delegated", Status: "active",
			Grants: []agentauth.Grant{{Capability: "check_balance", Status: "active"}, {Capability: "transfer", Status: "pending"}}},
		Host: &agentauth.Host{ID: "hst_1", UserID: "usr_1", Status: "active"},
		Claims: agentauth.Claims{Subject: "agt_1", Audience: []string{vfAud}, ID: "it-1", Capabilities: []string{"check_balance"},
			IssuedAt: sess.Claims.IssuedAt, ExpiresAt: sess.Claims.IssuedAt.Add(time.Minute)},
		Compact: true,
	}
	if diff := cmp.Diff(want, sess); diff != "" {
		t.Errorf("session (-want +got):\n%s", diff)
	}
	wantReq := []itRequest{{"POST", "/api/auth/agent/introspect", "application/json", "s3cret", map[string]any{"token": tok}}}
	if diff := cmp.Diff(wantReq, p.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestIntrospectionGrantsWithConstraints(t *testing.T) {
	p := itNewProvider(t)
	p.respond(200, `{"active":true,"agent_id":"agt_1","host_id":"hst_1","user_id":null,"mode":"autonomous",
	  "agent_capability_grants":[{"capability":"transfer","status":"active","constraints":{"amount":{"max":100}}},
	                             {"capability":"check_balance","status":"active","constraints":null},
	                             {"capability":"close","status":"active","constraints":{}}]}`)
	sess, err := p.source(t, nil).Session(context.Background(), itToken(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if sess.Compact {
		t.Error("Compact with constraints sent")
	}
	want := []agentauth.Grant{
		{Capability: "transfer", Status: "active", Constraints: map[string]json.RawMessage{"amount": json.RawMessage(`{"max":100}`)}},
		{Capability: "check_balance", Status: "active"},
		{Capability: "close", Status: "active", Constraints: map[string]json.RawMessage{}},
	}
	if diff := cmp.Diff(want, sess.Agent.Grants); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}
	if sess.Agent.UserID != "" || sess.Agent.Mode != agentauth.ModeAutonomous {
		t.Errorf("agent = %+v", sess.Agent)
	}
}

func TestIntrospectionFailures(t *testing.T) {
	invalid := vfOutcome{401, agentauth.CodeInvalidJWT, "invalid agent JWT"}
	tests := []struct {
		name     string
		status   int
		body     string
		token    func(t *testing.T) string
		config   func(*agentauth.IntrospectionConfig)
		want     vfOutcome
		noRemote bool
	}{
		{name: "inactive", status: 200, body: `{"active":false}`, want: invalid},
		{name: "inactive with extra members", status: 200, body: `{"active":false,"agent_id":"agt_1"}`, want: invalid},
		{name: "server error", status: 500, body: `{"error":"internal_error"}`, want: vfInternal},
		{name: "unauthorized caller", status: 401, body: `{"error":"unauthorized"}`, want: vfInternal},
		{name: "redirect", status: 307, body: ``, want: vfInternal},
		{name: "not JSON", status: 200, body: `<html>`, want: vfInternal},
		{name: "empty body", status: 200, body: ``, want: vfInternal},
		{name: "active missing", status: 200, body: `{"agent_id":"agt_1"}`, want: vfInternal},
		{name: "active a string", status: 200, body: `{"active":"true"}`, want: vfInternal},
		{name: "duplicate active", status: 200, body: `{"active":false,"active":true}`, want: vfInternal},
		{name: "no agent_id", status: 200, body: strings.Replace(itActive, `"agent_id": "agt_1",`, "", 1), want: vfInternal},
		{name: "no host_id", status: 200, body: strings.Replace(itActive, `"host_id": "hst_1",`, "", 1), want: vfInternal},
		{name: "bad mode", status: 200, body: strings.Replace(itActive, `"delegated"`, `"robot"`, 1), want: vfInternal},
		{name: "no grants", status: 200, body: `{"active":true,"agent_id":"agt_1","host_id":"hst_1","mode":"delegated"}`, want: vfInternal},
		{name: "grant bad status", status: 200, body: strings.Replace(itActive, `"status": "pending"`, `"status": "granted"`, 1), want: vfInternal},
		{name: "grant constraints not an object", status: 200, body: strings.Replace(itActive, `"status": "pending"`, `"status": "pending", "constraints": [1]`, 1), want: vfInternal},
		{name: "expires_at not a time", status: 200, body: strings.Replace(itActive, `2999-01-01T00:00:00Z`, `soon`, 1), want: vfInternal},
		{name: "agent differs from sub", status: 200, body: strings.Replace(itActive, `"agt_1"`, `"agt_2"`, 1), want: vfInternal},
		{name: "agent session expired", status: 200, body: strings.Replace(itActive, `2999-01-01T00:00:00Z`, `2020-01-01T00:00:00Z`, 1),
			want: vfOutcome{403, agentauth.CodeAgentExpired, "agent expired"}},
		{name: "response too large", status: 200, body: `{"active":false,"pad":"` + strings.Repeat("x", agentauth.MaxIntrospectionResponseBytes) + `"}`, want: vfInternal},
		{name: "host token", token: func(t *testing.T) string {
			return vfRaw(vfNewKey(t).priv, `{"alg":"EdDSA","typ":"host+jwt"}`, `{"sub":"agt_1"}`)
		}, want: invalid, noRemote: true},
		{name: "garbage", token: func(*testing.T) string { return "not.a.jwt" }, want: invalid, noRemote: true},
		{name: "alg none", token: func(t *testing.T) string {
			return vfRaw(vfNewKey(t).priv, `{"alg":"none","typ":"agent+jwt"}`, `{"sub":"agt_1"}`)
		}, want: invalid, noRemote: true},
		{name: "audience not ours", token: func(t *testing.T) string { return itToken(t, vfSet("aud", "https://elsewhere.example")) },
			config: func(c *agentauth.IntrospectionConfig) { c.Audiences = []string{vfAud} },
			want:   vfOutcome{401, agentauth.CodeInvalidJWT, "agent JWT audience not accepted"}, noRemote: true},
		{name: "audience ours", status: 200, body: itActive, token: func(t *testing.T) string { return itToken(t, vfSet("aud", []string{"x", vfAud})) },
			config: func(c *agentauth.IntrospectionConfig) { c.Audiences = []string{vfAud} }, want: vfOK},
		{name: "long expired", token: func(t *testing.T) string {
			return itToken(t, func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })
		}, want: vfOutcome{401, agentauth.CodeInvalidJWT, "agent JWT expired"}, noRemote: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := itNewProvider(t)
			p.respond(tt.status, tt.body)
			tok := itToken(t, nil)
			if tt.token != nil {
				tok = tt.token(t)
			}
			_, err := p.source(t, tt.config).Session(context.Background(), tok)
			if diff := cmp.Diff(tt.want, vfOutcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s\nerror: %v", diff, err)
			}
			if n := len(p.requests()); tt.noRemote && n != 0 {
				t.Fatalf("the provider was asked %d times", n)
			}
		})
	}
}

func TestIntrospectionRedirectNotFollowed(t *testing.T) {
	target := itNewProvider(t)
	target.respond(200, itActive)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.srv.URL+"/steal", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	s, err := agentauth.NewIntrospectionSource(agentauth.IntrospectionConfig{Endpoint: redirector.URL + "/agent/introspect", Header: "X-Provider-Key", Credential: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Session(context.Background(), itToken(t, nil))
	if vfOutcomeOf(t, err) != vfInternal {
		t.Fatalf("err = %v, want internal_error", err)
	}
	if n := len(target.requests()); n != 0 {
		t.Fatalf("the redirect target received %d requests", n)
	}
}

func TestIntrospectionTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	s, err := agentauth.NewIntrospectionSource(agentauth.IntrospectionConfig{
		Endpoint:   srv.URL + "/agent/introspect",
		HTTPClient: &http.Client{Timeout: 200 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = s.Session(context.Background(), itToken(t, nil))
	if vfOutcomeOf(t, err) != vfInternal {
		t.Fatalf("err = %v, want internal_error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Session(ctx, itToken(t, nil)); vfOutcomeOf(t, err) != vfInternal || !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled context: err = %v", err)
	}
}

func TestNewIntrospectionSourceConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  agentauth.IntrospectionConfig
		ok   bool
	}{
		{"https", agentauth.IntrospectionConfig{Endpoint: "https://auth.example/api/auth/agent/introspect"}, true},
		{"http loopback", agentauth.IntrospectionConfig{Endpoint: "http://127.0.0.1:3000/agent/introspect"}, true},
		{"http localhost", agentauth.IntrospectionConfig{Endpoint: "http://localhost:3000/agent/introspect"}, true},
		{"credential header", agentauth.IntrospectionConfig{Endpoint: "https://auth.example/i", Header: "Authorization", Credential: "Bearer x"}, true},
		{"http remote", agentauth.IntrospectionConfig{Endpoint: "http://auth.example/agent/introspect"}, false},
		{"relative", agentauth.IntrospectionConfig{Endpoint: "/agent/introspect"}, false},
		{"empty", agentauth.IntrospectionConfig{}, false},
		{"credentials in URL", agentauth.IntrospectionConfig{Endpoint: "https://u:p@auth.example/i"}, false},
		{"header without credential", agentauth.IntrospectionConfig{Endpoint: "https://auth.example/i", Header: "Authorization"}, false},
		{"credential without header", agentauth.IntrospectionConfig{Endpoint: "https://auth.example/i", Credential: "x"}, false},
		{"bad header name", agentauth.IntrospectionConfig{Endpoint: "https://auth.example/i", Header: "X Key", Credential: "x"}, false},
		{"credential with newline", agentauth.IntrospectionConfig{Endpoint: "https://auth.example/i", Header: "X-Key", Credential: "x\r\nX-Other: y"}, false},
		{"blank audience", agentauth.IntrospectionConfig{Endpoint: "https://auth.example/i", Audiences: []string{""}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agentauth.NewIntrospectionSource(tt.cfg)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok = %v", err, tt.ok)
			}
		})
	}
}

// itFixedResponse answers every request with one body, without a network.
type itFixedResponse []byte

func (b itFixedResponse) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(b)), Request: r}, nil
}

// FuzzIntrospectionResponse feeds arbitrary provider answers: never a
// panic, and a session only with the fields an active answer must have.
func FuzzIntrospectionResponse(f *testing.F) {
	f.Add(itActive)
	f.Add(`{"active":false}`)
	f.Add(`{"active":true,"agent_id":"agt_1","host_id":"h","mode":"autonomous","agent_capability_grants":[{"capability":"c","status":"active","constraints":{"a":1}}]}`)
	f.Add(`{"active":true,"agent_id":"agt_1","host_id":"h","mode":"delegated","agent_capability_grants":[],"expires_at":null}`)
	tok := itToken(f, vfSet("exp", time.Now().Add(24*time.Hour).Unix()))
	f.Fuzz(func(t *testing.T, body string) {
		s, err := agentauth.NewIntrospectionSource(agentauth.IntrospectionConfig{
			Endpoint:   "https://auth.example/agent/introspect",
			HTTPClient: &http.Client{Transport: itFixedResponse(body)},
		})
		if err != nil {
			t.Fatal(err)
		}
		sess, err := s.Session(context.Background(), tok)
		if err != nil {
			vfOutcomeOf(t, err)
			return
		}
		if sess.Agent.ID != "agt_1" || sess.Agent.HostID == "" || sess.Host.ID != sess.Agent.HostID ||
			(sess.Agent.Mode != agentauth.ModeDelegated && sess.Agent.Mode != agentauth.ModeAutonomous) || sess.Agent.Grants == nil {
			t.Fatalf("session from %q: %+v", body, sess.Agent)
		}
		for _, g := range sess.Agent.Grants {
			if !sess.Compact {
				continue
			}
			if g.Constraints != nil {
				t.Fatalf("compact session with constraints from %q", body)
			}
		}
	})
}

func ExampleNewIntrospectionSource() {
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer provider-secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		io.WriteString(w, `{"active": true, "agent_id": "agt_1", "host_id": "hst_1", "mode": "delegated",
		  "agent_capability_grants": [{"capability": "check_balance", "status": "active"}]}`)
	}))
	defer provider.Close()

	src, err := agentauth.NewIntrospectionSource(agentauth.IntrospectionConfig{
		Endpoint:   provider.URL + "/api/auth/agent/introspect",
		Header:     "Authorization",
		Credential: "Bearer provider-secret",
		Audiences:  []string{"https://bank.example/capability/execute"},
	})
	if err != nil {
		panic(err)
	}
	sess, err := src.Session(context.Background(), exampleAgentToken())
	fmt.Println(sess.Agent.ID, sess.Agent.Grants[0].Capability, sess.Compact, err)
	// Output: agt_1 check_balance true <nil>
}

// exampleAgentToken stands for the bearer token an agent's client sends.
func exampleAgentToken() string {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: priv},
		(&jose.SignerOptions{}).WithType("agent+jwt"))
	now := time.Now().Unix()
	payload, _ := json.Marshal(map[string]any{
		"sub": "agt_1", "aud": "https://bank.example/capability/execute", "iat": now, "exp": now + 60, "jti": "ex-1",
	})
	jws, _ := signer.Sign(payload)
	token, _ := jws.CompactSerialize()
	return token
}
