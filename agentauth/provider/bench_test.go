package provider_test

import (
	"net/http"
	"testing"

	"github.com/agentcap/agentcap/agentauth/provider"
)

// BenchmarkStatus measures a host-authenticated status read end to end
// over loopback HTTP: host JWT parsing and verification, the replay
// check, two store reads and the answer.
func BenchmarkStatus(b *testing.B) {
	e := newEnv(b, func(c *provider.Config) { c.RateLimits.Off = true })
	h := newKey(b)
	r := e.register(h, newKey(b), map[string]any{"name": "bench", "capabilities": []any{"echo"}})
	e.approve(r, "alice", nil)
	path := provider.PathStatus + "?agent_id=" + r.str("agent_id")
	tokens := make([]string, b.N)
	for i := range tokens {
		tokens[i] = e.hostToken(h, nil)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := e.do(http.MethodGet, path, tokens[i], nil); r.status != http.StatusOK {
			b.Fatalf("%d %s", r.status, r.raw)
		}
	}
}

// BenchmarkIntrospect measures introspection of a fresh agent JWT.
func BenchmarkIntrospect(b *testing.B) {
	e := newEnv(b, func(c *provider.Config) { c.RateLimits.Off = true })
	a := newKey(b)
	r := e.register(newKey(b), a, map[string]any{"name": "bench", "capabilities": []any{"echo"}})
	e.approve(r, "alice", nil)
	tokens := make([]string, b.N)
	for i := range tokens {
		tokens[i] = e.agentToken(a, r.str("agent_id"), e.url+"/capability/execute", nil)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := e.do(http.MethodPost, provider.PathIntrospect, "", map[string]any{"token": tokens[i]}); r.body["active"] != true {
			b.Fatalf("%s", r.raw)
		}
	}
}
