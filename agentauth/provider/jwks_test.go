package provider_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/provider"
)

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
			if r.status != http.StatusBadRequest || r.str("error") != "invalid_request" {
				t.Errorf("registration: %d %s", r.status, r.raw)
			}
		})
	}
	r := e.do(http.MethodPost, provider.PathRegister, e.hostToken(h, nil, agentJWKS("https://keys.example.com/agents.json", "k1")), map[string]any{"name": "jwks agent"})
	if r.status != http.StatusOK || r.str("status") != agentauth.StatusPending {
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
		if r.status != http.StatusOK || r.str("status") != agentauth.StatusPending {
			t.Fatalf("registration %d: %d %s", i, r.status, r.raw)
		}
		if i == 0 {
			first = r
		}
	}
	r := e.register(h, newKey(t), nil)
	if r.status != http.StatusTooManyRequests || r.str("error") != agentauth.CodeRateLimited || r.header.Get("Retry-After") == "" {
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
