package provider_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/provider"
)

// jwksServer serves JWK Sets on loopback, by path, and counts fetches.
type jwksServer struct {
	srv *httptest.Server

	mu   sync.Mutex
	sets map[string][]byte
	hits map[string]int
	all  int
}

func newJWKSServer(t testing.TB) *jwksServer {
	t.Helper()
	s := &jwksServer{sets: map[string][]byte{}, hits: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.all++
		body, ok := s.sets[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// publish serves the keys of ks, by kid, at path, and returns its URL.
func (s *jwksServer) publish(t testing.TB, path string, ks map[string]*key) string {
	t.Helper()
	var set jose.JSONWebKeySet
	for kid, k := range ks {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.pub(), KeyID: kid})
	}
	body, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sets[path] = body
	return s.srv.URL + path
}

func (s *jwksServer) fetches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.all
}

// newJWKSEnv is an env whose provider may fetch JWKS from loopback.
func newJWKSEnv(t testing.TB, mods ...func(*provider.Config)) (*env, *jwksServer) {
	t.Helper()
	mods = append([]func(*provider.Config){func(c *provider.Config) { c.KeyFetch.AllowLoopback = true }}, mods...)
	return newEnv(t, mods...), newJWKSServer(t)
}

// jwksHost makes a host JWT claim a JWKS host: its key is the one
// named kid at url.
func jwksHost(kid, url string) func(hdr, claims map[string]any) {
	return func(hdr, c map[string]any) {
		hdr["kid"] = kid
		delete(c, "host_public_key")
		c["host_jwks_url"] = url
	}
}

// TestRegisterChecksJWKSURLs: the JWKS URLs of a registration are checked
// against the fetch policy before anything is stored or fetched: https
// only, no credentials, no address literal that is not public, at most
// 2048 bytes; a kid at most 256 bytes. Before, agent_jwks_url was stored
// as given, for the verifier to fetch.
func TestRegisterChecksJWKSURLs(t *testing.T) {
	e := newEnv(t)
	h := newKey(t)
	if r := e.register(h, newKey(t), nil); r.status != http.StatusOK {
		t.Fatalf("first registration: %d %s", r.status, r.raw)
	}
	agentJWKS := func(url, kid string) func(_, c map[string]any) {
		return func(_, c map[string]any) {
			delete(c, "agent_public_key")
			c["agent_jwks_url"], c["agent_kid"] = url, kid
		}
	}
	refused := []struct {
		name, url, kid string
	}{
		{"plain http", "http://keys.example.com/agents.json", "k1"},
		{"private address", "https://10.1.2.3/agents.json", "k1"},
		{"metadata address", "https://169.254.169.254/latest", "k1"},
		{"loopback", "https://127.0.0.1:8443/agents.json", "k1"},
		{"credentials", "https://user:pw@keys.example.com/agents.json", "k1"},
		{"other scheme", "file:///etc/passwd", "k1"},
		{"too long", "https://keys.example.com/" + strings.Repeat("a", 2048), "k1"},
		{"kid too long", "https://keys.example.com/agents.json", strings.Repeat("k", 257)},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(http.MethodPost, provider.PathRegister, e.hostToken(h, nil, agentJWKS(tt.url, tt.kid)), map[string]any{"name": "jwks agent"})
			if r.status != http.StatusBadRequest || r.code() != "invalid_request" {
				t.Errorf("registration: %d %s", r.status, r.raw)
			}
		})
	}
	r := e.do(http.MethodPost, provider.PathRegister, e.hostToken(h, nil, agentJWKS("https://keys.example.com/agents.json", "k1")), map[string]any{"name": "jwks agent"})
	if r.status != http.StatusOK || r.str("status") != agentcap.StatusPending {
		t.Errorf("registration with a fetchable URL: %d %s", r.status, r.raw)
	}

	// A new host's host_jwks_url is checked before it is fetched.
	nh := newKey(t)
	tok := e.hostToken(nh, newKey(t), func(_, c map[string]any) {
		delete(c, "host_public_key")
		c["host_jwks_url"] = "https://192.168.1.1/host.json"
	})
	if r := e.do(http.MethodPost, provider.PathRegister, tok, map[string]any{"name": "x"}); r.status != http.StatusBadRequest {
		t.Errorf("new host with a private host_jwks_url: %d %s", r.status, r.raw)
	}
}

// TestPendingAgentsCapped: a host may have Config.MaxPendingAgents agents
// waiting for approval; the next registration is 429 rate_limited until
// one of them is decided. Before, a host could leave any number of agents
// pending, each with a JWKS URL of its choosing.
func TestPendingAgentsCapped(t *testing.T) {
	e := newEnv(t, func(c *provider.Config) { c.MaxPendingAgents = 3 })
	h := newKey(t)
	var first response
	for i := range 3 {
		r := e.register(h, newKey(t), nil)
		if r.status != http.StatusOK || r.str("status") != agentcap.StatusPending {
			t.Fatalf("registration %d: %d %s", i, r.status, r.raw)
		}
		if i == 0 {
			first = r
		}
	}
	r := e.register(h, newKey(t), nil)
	if r.status != http.StatusTooManyRequests || r.code() != agentcap.CodeRateLimited || r.header.Get("Retry-After") == "" {
		t.Fatalf("registration past the bound: %d %v %s", r.status, r.header, r.raw)
	}
	e.approve(first, "user_1", nil)
	if r := e.register(h, newKey(t), nil); r.status != http.StatusOK {
		t.Errorf("registration after one was approved: %d %s", r.status, r.raw)
	}
	// Another host has its own bound.
	if r := e.register(newKey(t), newKey(t), nil); r.status != http.StatusOK {
		t.Errorf("another host: %d %s", r.status, r.raw)
	}
}

// TestForgedHostJWTsShareTheKeyCache: host JWTs of a JWKS host, forged
// (the iss, the key's thumbprint, is public), are checked against the
// verifier's cached key set, so that they cannot make the provider fetch
// the host's URL more than once per refresh floor, whatever their kid; a
// revoked host's URL is not fetched at all. Before, every host JWT of a
// JWKS host fetched its URL, with no cache and no floor, before its
// signature was checked.
func TestForgedHostJWTsShareTheKeyCache(t *testing.T) {
	e, keys := newJWKSEnv(t)
	h, forger := newKey(t), newKey(t)
	url := keys.publish(t, "/host.json", map[string]*key{"hk1": h})
	r := e.do(http.MethodPost, provider.PathRegister, e.hostToken(h, newKey(t), jwksHost("hk1", url)), map[string]any{"name": "x"})
	if r.status != http.StatusOK {
		t.Fatalf("registration of a JWKS host: %d %s", r.status, r.raw)
	}
	status := provider.PathStatus + "?agent_id=" + r.str("agent_id")
	if got := keys.fetches(); got != 1 {
		t.Fatalf("registration fetched %d times, want 1", got)
	}
	forged := func(kid string) string {
		return forger.sign(map[string]any{"alg": "EdDSA", "typ": "host+jwt", "kid": kid}, map[string]any{
			"iss": h.thumbprint(), "aud": e.url, "iat": e.clock.Now().Unix(), "exp": e.clock.Now().Unix() + 60, "jti": nextJTI(),
		})
	}
	for i := range 50 {
		for _, kid := range []string{"hk1", "other" + nextJTI()} {
			if r := e.do(http.MethodGet, status, forged(kid), nil); r.status != http.StatusUnauthorized {
				t.Fatalf("forged host JWT %d (kid %s): %d %s", i, kid, r.status, r.raw)
			}
		}
	}
	// The forged kids that the set lacks may fetch once: the floor.
	if got := keys.fetches(); got > 2 {
		t.Errorf("100 forged host JWTs made %d fetches in all, want at most 2", got)
	}
	if r := e.do(http.MethodGet, status, e.hostToken(h, nil, jwksHost("hk1", url)), nil); r.status != http.StatusOK {
		t.Fatalf("the host's own token: %d %s", r.status, r.raw)
	}

	// A revoked host's URL is never fetched again.
	if r := e.do(http.MethodPost, provider.PathRevokeHost, e.hostToken(h, nil, jwksHost("hk1", url)), nil); r.status != http.StatusOK {
		t.Fatalf("revoke: %d %s", r.status, r.raw)
	}
	before := keys.fetches()
	if r := e.do(http.MethodGet, status, e.hostToken(h, nil, jwksHost("hk1", url)), nil); r.status != http.StatusForbidden || r.code() != agentcap.CodeHostRevoked {
		t.Errorf("the revoked host's own token: %d %s", r.status, r.raw)
	}
	e.clock.Advance(time.Hour)
	for range 10 {
		if r := e.do(http.MethodGet, status, forged("other"+nextJTI()), nil); r.status != http.StatusUnauthorized {
			t.Fatalf("forged token of a revoked host: %d %s", r.status, r.raw)
		}
	}
	if got := keys.fetches(); got != before {
		t.Errorf("tokens of a revoked host made %d fetches", got-before)
	}
}

// registerFrom is e.register of a host JWT token, from client address
// addr (read by the env's RateLimits.ClientIP from X-Test-Client).
func (e *env) registerFrom(addr, token string) response {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+provider.PathRegister, strings.NewReader(`{"name":"x"}`))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Test-Client", addr)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	out := response{status: resp.StatusCode, header: resp.Header}
	_ = json.NewDecoder(resp.Body).Decode(&out.body)
	return out
}

// TestNewHostKeyFetchBudget: registrations of new JWKS hosts, which
// fetch host_jwks_url before any signature is checked, are charged a
// fetch budget per client address and per URL before the fetch (20 and
// 10 an hour by default); past it they are 429 rate_limited and nothing
// is fetched. Before, 60 unauthenticated registrations fetched 60 times.
func TestNewHostKeyFetchBudget(t *testing.T) {
	e, keys := newJWKSEnv(t, func(c *provider.Config) {
		c.RateLimits.ClientIP = func(r *http.Request) string { return r.Header.Get("X-Test-Client") }
	})
	newHost := func(url, kid string) string {
		h := newKey(t)
		return e.hostToken(h, newKey(t), jwksHost(kid, url))
	}
	count := func(rs []int) map[int]int {
		out := map[int]int{}
		for _, s := range rs {
			out[s]++
		}
		return out
	}

	// One address, a new URL each time (none serves a key set).
	var got []int
	for i := range 60 {
		got = append(got, e.registerFrom("192.0.2.1", newHost(keys.srv.URL+"/missing/"+strings.Repeat("x", i%7)+nextJTI(), "k1")).status)
	}
	if diff := cmp.Diff(map[int]int{401: 20, 429: 40}, count(got)); diff != "" {
		t.Errorf("60 registrations from one address (-want +got):\n%s", diff)
	}
	if n := keys.fetches(); n != 20 {
		t.Errorf("60 registrations from one address fetched %d times, want 20", n)
	}

	// One URL, from many addresses, each time past the refresh floor and
	// with a kid its set lacks, so that each would fetch.
	url := keys.publish(t, "/shared.json", map[string]*key{"k0": newKey(t)})
	before := keys.fetches()
	got = got[:0]
	for i := range 30 {
		e.clock.Advance(11 * time.Second)
		got = append(got, e.registerFrom(fmt.Sprintf("198.51.100.%d", i), newHost(url, "k"+nextJTI())).status)
	}
	if diff := cmp.Diff(map[int]int{401: 10, 429: 20}, count(got)); diff != "" {
		t.Errorf("30 registrations naming one URL (-want +got):\n%s", diff)
	}
	if n := keys.fetches() - before; n != 10 {
		t.Errorf("30 registrations naming one URL fetched it %d times, want 10", n)
	}
}
