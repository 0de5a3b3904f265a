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

	"github.com/agentcap/agentcap"
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
	cfg := agentauth.IntrospectionConfig{Endpoint: p.srv.URL + "/api/auth/agent/introspect", Header: "X-Provider-Key", Credential: "s3cret", Audiences: []string{vfAud}}
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
	if sess.Agent.UserID != "" || sess.Agent.Mode != agentcap.ModeAutonomous {
		t.Errorf("agent = %+v", sess.Agent)
	}
}

func TestIntrospectionFailures(t *testing.T) {
	invalid := vfOutcome{401, agentcap.CodeInvalidJWT, "invalid agent JWT"}
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
			want: vfOutcome{403, agentcap.CodeAgentExpired, "agent expired"}},
		{name: "response too large", status: 200, body: `{"active":false,"pad":"` + strings.Repeat("x", agentauth.MaxIntrospectionResponseBytes) + `"}`, want: vfInternal},
		{name: "host token", token: func(t *testing.T) string {
			return vfRaw(vfNewKey(t).priv, `{"alg":"EdDSA","typ":"host+jwt"}`, `{"sub":"agt_1"}`)
		}, want: invalid, noRemote: true},
		{name: "garbage", token: func(*testing.T) string { return "not.a.jwt" }, want: invalid, noRemote: true},
		{name: "alg none", token: func(t *testing.T) string {
			return vfRaw(vfNewKey(t).priv, `{"alg":"none","typ":"agent+jwt"}`, `{"sub":"agt_1"}`)
		}, want: invalid, noRemote: true},
		{name: "audience not ours", token: func(t *testing.T) string { return itToken(t, vfSet("aud", "https://elsewhere.example")) },
			want: vfAudience, noRemote: true},
		{name: "audience of another location of the same provider", token: func(t *testing.T) string {
			return itToken(t, vfSet("aud", "https://bank.example/other/capability/execute"))
		}, want: vfAudience, noRemote: true},
		{name: "audience missing", token: func(t *testing.T) string { return itToken(t, func(c map[string]any) { delete(c, "aud") }) },
			want: vfAudience, noRemote: true},
		{name: "audience array without ours", token: func(t *testing.T) string { return itToken(t, vfSet("aud", []string{"x", "y"})) },
			want: vfAudience, noRemote: true},
		{name: "audience ours", status: 200, body: itActive, token: func(t *testing.T) string { return itToken(t, vfSet("aud", []string{"x", vfAud})) },
			want: vfOK},
		{name: "second audience", status: 200, body: itActive, token: func(t *testing.T) string { return itToken(t, vfSet("aud", "https://bank.example")) },
			config: func(c *agentauth.IntrospectionConfig) { c.Audiences = []string{vfAud, "https://bank.example"} }, want: vfOK},
		{name: "no jti without a replay cache is the provider's call", status: 200, body: itActive,
			token: func(t *testing.T) string { return itToken(t, func(c map[string]any) { delete(c, "jti") }) }, want: vfOK},
		{name: "no jti with a replay cache", token: func(t *testing.T) string { return itToken(t, func(c map[string]any) { delete(c, "jti") }) },
			config: itWithReplay, want: vfMissing, noRemote: true},
		{name: "empty jti with a replay cache", token: func(t *testing.T) string { return itToken(t, vfSet("jti", "")) },
			config: itWithReplay, want: vfMissing, noRemote: true},
		{name: "no exp with a replay cache", token: func(t *testing.T) string { return itToken(t, func(c map[string]any) { delete(c, "exp") }) },
			config: itWithReplay, want: vfMissing, noRemote: true},
		{name: "exp beyond the replay window", token: func(t *testing.T) string {
			return itToken(t, vfSet("exp", time.Now().Add(agentauth.DefaultMaxAge+agentauth.MaxSkew+time.Minute).Unix()))
		}, config: itWithReplay, want: vfLifetime, noRemote: true},
		{name: "exp at the edge of the replay window", status: 200, body: itActive, token: func(t *testing.T) string {
			return itToken(t, vfSet("exp", time.Now().Add(agentauth.DefaultMaxAge+agentauth.MaxSkew-5*time.Second).Unix()))
		}, config: itWithReplay, want: vfOK},
		{name: "long exp without a replay cache is the provider's call", status: 200, body: itActive, token: func(t *testing.T) string {
			return itToken(t, vfSet("exp", time.Now().Add(time.Hour).Unix()))
		}, want: vfOK},
		{name: "long expired", token: func(t *testing.T) string {
			return itToken(t, func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })
		}, want: vfOutcome{401, agentcap.CodeInvalidJWT, "agent JWT expired"}, noRemote: true},
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

// itWithReplay gives the source a replay cache of its own.
func itWithReplay(c *agentauth.IntrospectionConfig) { c.Replay = agentauth.NewMemoryReplayCache(0) }

// itRecordingCache is a ReplayCache that remembers what it was asked.
type itRecordingCache struct {
	inner agentauth.ReplayCache
	err   error
	mu    sync.Mutex
	calls []itReplayCall
}

type itReplayCall struct {
	Key string
	TTL time.Duration
}

func (c *itRecordingCache) CheckAndSet(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	c.mu.Lock()
	c.calls = append(c.calls, itReplayCall{key, ttl})
	c.mu.Unlock()
	if c.err != nil {
		return false, c.err
	}
	return c.inner.CheckAndSet(ctx, key, ttl)
}

func (c *itRecordingCache) recorded() []itReplayCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]itReplayCall(nil), c.calls...)
}

func TestIntrospectionReplay(t *testing.T) {
	replayed := vfOutcome{401, agentcap.CodeInvalidJWT, "agent JWT already used"}
	ttl := agentauth.DefaultMaxAge + 2*agentauth.MaxSkew
	key := agentauth.ReplayKeyPrefix + "agt_1:it-1"

	t.Run("a token is good once", func(t *testing.T) {
		p := itNewProvider(t)
		p.respond(200, itActive)
		cache := &itRecordingCache{inner: agentauth.NewMemoryReplayCache(0)}
		src := p.source(t, func(c *agentauth.IntrospectionConfig) { c.Replay = cache })
		tok := itToken(t, nil)
		if _, err := src.Session(context.Background(), tok); err != nil {
			t.Fatalf("first use: %v", err)
		}
		_, err := src.Session(context.Background(), tok)
		if diff := cmp.Diff(replayed, vfOutcomeOf(t, err)); diff != "" {
			t.Errorf("second use (-want +got):\n%s", diff)
		}
		// Another token id of the same agent is fresh.
		if _, err := src.Session(context.Background(), itToken(t, vfSet("jti", "it-2"))); err != nil {
			t.Errorf("another jti: %v", err)
		}
		want := []itReplayCall{{key, ttl}, {key, ttl}, {agentauth.ReplayKeyPrefix + "agt_1:it-2", ttl}}
		if diff := cmp.Diff(want, cache.recorded()); diff != "" {
			t.Errorf("cache calls (-want +got):\n%s", diff)
		}
		// The provider did not consume the jti, and was asked each time.
		if n := len(p.requests()); n != 3 {
			t.Errorf("the provider was asked %d times, want 3", n)
		}
	})

	t.Run("refused tokens are not spent", func(t *testing.T) {
		p := itNewProvider(t)
		cache := &itRecordingCache{inner: agentauth.NewMemoryReplayCache(0)}
		src := p.source(t, func(c *agentauth.IntrospectionConfig) { c.Replay = cache })
		tok := itToken(t, nil)
		for _, answer := range []struct {
			status int
			body   string
			want   vfOutcome
		}{
			{200, `{"active":false}`, vfInvalid},
			{503, `{"error":"unavailable"}`, vfInternal},
			{200, strings.Replace(itActive, `"agt_1"`, `"agt_2"`, 1), vfInternal},
			{200, strings.Replace(itActive, `2999-01-01T00:00:00Z`, `2020-01-01T00:00:00Z`, 1), vfOutcome{403, agentcap.CodeAgentExpired, "agent expired"}},
		} {
			p.respond(answer.status, answer.body)
			_, err := src.Session(context.Background(), tok)
			if diff := cmp.Diff(answer.want, vfOutcomeOf(t, err)); diff != "" {
				t.Fatalf("answer %s (-want +got):\n%s", answer.body, diff)
			}
		}
		if _, err := src.Session(context.Background(), itToken(t, vfSet("aud", "https://elsewhere.example"))); vfOutcomeOf(t, err) != vfAudience {
			t.Fatalf("wrong audience: %v", err)
		}
		if calls := cache.recorded(); len(calls) != 0 {
			t.Fatalf("the cache was asked %v before any success", calls)
		}
		p.respond(200, itActive)
		if _, err := src.Session(context.Background(), tok); err != nil {
			t.Fatalf("the token was spent by a refusal: %v", err)
		}
	})

	t.Run("a failing cache fails closed", func(t *testing.T) {
		p := itNewProvider(t)
		p.respond(200, itActive)
		src := p.source(t, func(c *agentauth.IntrospectionConfig) {
			c.Replay = &itRecordingCache{err: errors.New("redis: connection refused")}
		})
		_, err := src.Session(context.Background(), itToken(t, nil))
		if diff := cmp.Diff(vfReplayDown, vfOutcomeOf(t, err)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		vfCheckRetryAfter(t, err)
	})

	t.Run("concurrent uses: one wins", func(t *testing.T) {
		p := itNewProvider(t)
		p.respond(200, itActive)
		src := p.source(t, itWithReplay)
		tok := itToken(t, nil)
		const n = 16
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = src.Session(context.Background(), tok)
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch o := vfOutcomeOf(t, err); o {
			case vfOK:
				won++
			case replayed:
			default:
				t.Errorf("outcome %+v", o)
			}
		}
		if won != 1 {
			t.Errorf("%d uses succeeded, want 1", won)
		}
	})

	// A token spent at a Verifier sharing the cache is spent here, and
	// the other way round: both use one key for one token.
	t.Run("shared with a Verifier", func(t *testing.T) {
		cache := agentauth.NewMemoryReplayCache(0)
		w := vfNewWorld(t, func(c *agentauth.VerifierConfig) { c.Now, c.Replay = time.Now, cache })
		p := itNewProvider(t)
		p.respond(200, itActive)
		src := p.source(t, func(c *agentauth.IntrospectionConfig) { c.Replay = cache })
		mint := func(jti string) string {
			now := time.Now().Unix()
			return vfMint(t, w.agentKey.priv, w.agentKey.thumb, map[string]any{"sub": vfAgent, "aud": vfAud, "iat": now, "exp": now + 60, "jti": jti})
		}

		first := mint("shared-1")
		if _, err := w.v.Session(context.Background(), first); err != nil {
			t.Fatalf("verifier: %v", err)
		}
		if _, err := src.Session(context.Background(), first); vfOutcomeOf(t, err) != replayed {
			t.Errorf("introspecting a token the verifier spent: %v", err)
		}

		second := mint("shared-2")
		if _, err := src.Session(context.Background(), second); err != nil {
			t.Fatalf("introspection: %v", err)
		}
		if _, err := w.v.Session(context.Background(), second); vfOutcomeOf(t, err) != replayed {
			t.Errorf("verifying a token introspection spent: %v", err)
		}
	})
}

func TestIntrospectionRedirectNotFollowed(t *testing.T) {
	target := itNewProvider(t)
	target.respond(200, itActive)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.srv.URL+"/steal", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	s, err := agentauth.NewIntrospectionSource(agentauth.IntrospectionConfig{
		Endpoint: redirector.URL + "/agent/introspect", Header: "X-Provider-Key", Credential: "s3cret", Audiences: []string{vfAud},
	})
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
		Audiences:  []string{vfAud},
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
	aud := []string{vfAud}
	tests := []struct {
		name string
		cfg  agentauth.IntrospectionConfig
		ok   bool
	}{
		{"https", agentauth.IntrospectionConfig{Endpoint: "https://auth.example/api/auth/agent/introspect", Audiences: aud}, true},
		{"http loopback", agentauth.IntrospectionConfig{Endpoint: "http://127.0.0.1:3000/agent/introspect", Audiences: aud}, true},
		{"http localhost", agentauth.IntrospectionConfig{Endpoint: "http://localhost:3000/agent/introspect", Audiences: aud}, true},
		{"credential header", agentauth.IntrospectionConfig{Endpoint: "https://auth.example/i", Audiences: aud, Header: "Authorization", Credential: "Bearer x"}, true},
		{"http remote", agentauth.IntrospectionConfig{Endpoint: "http://auth.example/agent/introspect", Audiences: aud}, false},
		{"relative", agentauth.IntrospectionConfig{Endpoint: "/agent/introspect", Audiences: aud}, false},
		{"empty", agentauth.IntrospectionConfig{}, false},
		{"no audiences", agentauth.IntrospectionConfig{Endpoint: "https://auth.example/i"}, false},
		{"empty audiences", agentauth.IntrospectionConfig{Endpoint: "https://auth.example/i", Audiences: []string{}}, false},
		{"replay cache", agentauth.IntrospectionConfig{Endpoint: "https://auth.example/i", Audiences: aud, Replay: agentauth.NewMemoryReplayCache(0)}, true},
		{"credentials in URL", agentauth.IntrospectionConfig{Endpoint: "https://u:p@auth.example/i", Audiences: aud}, false},
		{"header without credential", agentauth.IntrospectionConfig{Endpoint: "https://auth.example/i", Audiences: aud, Header: "Authorization"}, false},
		{"credential without header", agentauth.IntrospectionConfig{Endpoint: "https://auth.example/i", Audiences: aud, Credential: "x"}, false},
		{"bad header name", agentauth.IntrospectionConfig{Endpoint: "https://auth.example/i", Audiences: aud, Header: "X Key", Credential: "x"}, false},
		{"credential with newline", agentauth.IntrospectionConfig{Endpoint: "https://auth.example/i", Audiences: aud, Header: "X-Key", Credential: "x\r\nX-Other: y"}, false},
		{"blank audience", agentauth.IntrospectionConfig{Endpoint: "https://auth.example/i", Audiences: []string{vfAud, " "}}, false},
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
			Audiences:  []string{vfAud},
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
			(sess.Agent.Mode != agentcap.ModeDelegated && sess.Agent.Mode != agentcap.ModeAutonomous) || sess.Agent.Grants == nil {
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

// TestIntrospectionConcurrencyBounded: tokens are sent to the provider
// before anything proves who made them, so the requests under way are
// bounded (IntrospectionConfig.MaxConcurrent): a token arriving while
// that many wait for the provider is refused with 503
// temporarily_unavailable and Retry-After, and no request is made for
// it. Before, every forged token held a request to the provider, without
// bound.
func TestIntrospectionConcurrencyBounded(t *testing.T) {
	const bound = 3
	arrived := make(chan struct{}, 2*bound)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, itActive)
	}))
	defer srv.Close()
	s, err := agentauth.NewIntrospectionSource(agentauth.IntrospectionConfig{
		Endpoint: srv.URL + "/agent/introspect", Audiences: []string{vfAud}, MaxConcurrent: bound,
	})
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan error, bound)
	for range bound {
		go func() {
			_, err := s.Session(context.Background(), itToken(t, nil))
			results <- err
		}()
	}
	for range bound {
		<-arrived
	}
	over := make(chan error, 1)
	go func() {
		_, err := s.Session(context.Background(), itToken(t, nil))
		over <- err
	}()
	select {
	case err := <-over:
		var ae *agentcap.Error
		if !errors.As(err, &ae) || ae.HTTPStatus() != http.StatusServiceUnavailable || ae.Code != agentcap.CodeTemporarilyUnavailable || ae.RetryAfter <= 0 {
			t.Errorf("a token past the bound: %v", err)
		}
	case <-arrived:
		t.Error("the token past the bound reached the provider")
		defer func() { <-over }()
	}
	close(release)
	for range bound {
		if err := <-results; err != nil {
			t.Errorf("a token within the bound: %v", err)
		}
	}
	if _, err := s.Session(context.Background(), itToken(t, nil)); err != nil {
		t.Errorf("once the requests ended: %v", err)
	}
}
