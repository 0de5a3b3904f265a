package provider_test

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/internal/benchcpu"
)

var (
	benchExecute  = []byte(`{"capability":"echo","arguments":{"message":"hi"}}`)
	benchToolCall = []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`)
)

// BenchmarkOAuthToolsCall compares, for one agent of alice holding echo,
// the server's work for one call of echo: an execute at the capability
// location with an agent JWT (httpx), a tools/call at the MCP endpoint
// with an agent JWT, and the same tools/call with an OAuth access token.
// Every path verifies for real: the agent JWTs (one per call, signed
// before the timer starts) are checked against the store and the replay
// cache, the access token against its seal and the store. in-process
// calls the site's handler directly; loopback sends the requests over TCP
// with a keep-alive client, whose work is counted too. cpu-ns/op is the
// process CPU time per call.
func BenchmarkOAuthToolsCall(b *testing.B) {
	e := newOAuthEnv(b, func(c *provider.Config) { c.RateLimits.Off = true })
	access := e.grant(b, signedIn(b, e))["access_token"].(string)
	a := newKey(b)
	r := e.register(newKey(b), a, map[string]any{"name": "bench", "capabilities": []any{"echo"}})
	e.approve(r, "alice", nil)
	agentID := r.str("agent_id")
	execute := e.url + "/capability/execute"

	type path struct {
		name  string
		route string
		body  []byte
		auth  func(n int) []string
	}
	jwts := func(aud string) func(n int) []string {
		return func(n int) []string {
			out := make([]string, n)
			for i := range out {
				out[i] = "Bearer " + e.agentToken(a, agentID, aud, nil)
			}
			return out
		}
	}
	paths := []path{
		{"execute-agent-jwt", "/capability/execute", benchExecute, jwts(execute)},
		{"mcp-agent-jwt", "/mcp", benchToolCall, jwts(e.resource)},
		{"mcp-oauth", "/mcp", benchToolCall, func(n int) []string {
			out := make([]string, n)
			for i := range out {
				out[i] = "Bearer " + access
			}
			return out
		}},
	}
	setHeaders := func(h http.Header, route, authorization string) {
		h.Set("Authorization", authorization)
		h.Set("Content-Type", "application/json")
		if route == "/mcp" {
			h.Set("Accept", "application/json, text/event-stream")
			h.Set("Mcp-Protocol-Version", "2025-06-18")
		}
	}
	run := func(b *testing.B, p path, call func(route, authorization string, body []byte) (int, []byte)) {
		auths := p.auth(b.N)
		b.ReportAllocs()
		b.ResetTimer()
		cpu0, ok0 := benchcpu.Process()
		for i := 0; i < b.N; i++ {
			status, body := call(p.route, auths[i], p.body)
			if status != http.StatusOK || !bytes.Contains(body, []byte(`"hi"`)) {
				b.Fatalf("%s: %d %s", p.name, status, body)
			}
		}
		if cpu1, ok := benchcpu.Process(); ok && ok0 {
			b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
		}
	}
	site := e.srv.Config.Handler
	b.Run("in-process", func(b *testing.B) {
		for _, p := range paths {
			b.Run(p.name, func(b *testing.B) {
				run(b, p, func(route, authorization string, body []byte) (int, []byte) {
					req := httptest.NewRequest(http.MethodPost, e.url+route, bytes.NewReader(body))
					req.RemoteAddr = "127.0.0.1:40000"
					setHeaders(req.Header, route, authorization)
					rec := httptest.NewRecorder()
					site.ServeHTTP(rec, req)
					return rec.Code, rec.Body.Bytes()
				})
			})
		}
	})
	b.Run("loopback", func(b *testing.B) {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DialContext: (&net.Dialer{}).DialContext}}
		for _, p := range paths {
			b.Run(p.name, func(b *testing.B) {
				run(b, p, func(route, authorization string, body []byte) (int, []byte) {
					req, err := http.NewRequest(http.MethodPost, e.url+route, bytes.NewReader(body))
					if err != nil {
						b.Fatal(err)
					}
					setHeaders(req.Header, route, authorization)
					resp, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					defer resp.Body.Close()
					var out bytes.Buffer
					_, _ = out.ReadFrom(resp.Body)
					return resp.StatusCode, out.Bytes()
				})
			})
		}
	})
}
