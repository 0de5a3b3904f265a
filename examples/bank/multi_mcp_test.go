//go:build multiinstance

package main_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap/client"
)

// mcpScenario sends MCP traffic through the plain round-robin balancer:
// clients of the official Go SDK at their defaults (the newest protocol)
// connect to the bank's stateless /mcp, list the tools and call
// check_balance, each HTTP request signed with a fresh agent JWT. With no
// sessions and no sticky routing, every request may reach any instance,
// and every call must be answered.
func (c *cluster) mcpScenario(ctx context.Context, t *testing.T, fig *figures, agents []*client.Agent, clients, calls int) {
	endpoint := c.issuer + "/mcp"
	var (
		mu       sync.Mutex
		per      = map[string]int{}
		lat      []time.Duration
		bad      []string
		versions = map[string]int{}
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		bad = append(bad, fmt.Sprintf(format, args...))
	}
	began := time.Now()
	var wg sync.WaitGroup
	for i := range clients {
		agent := agents[i%len(agents)]
		wg.Go(func() {
			hc := &http.Client{Timeout: 30 * time.Second, Transport: mcpRoundTripper(func(r *http.Request) (*http.Response, error) {
				tok, err := agent.SignJWT(endpoint, nil)
				if err != nil {
					return nil, err
				}
				r = r.Clone(r.Context())
				r.Header.Set("Authorization", "Bearer "+tok)
				resp, err := http.DefaultTransport.RoundTrip(r)
				if err == nil {
					mu.Lock()
					per[resp.Header.Get("X-Backend")]++
					mu.Unlock()
				}
				return resp, err
			})}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "multi", Version: "1"}, nil).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}, nil)
			if err != nil {
				fail("client %d: connect: %v", i, err)
				return
			}
			defer cs.Close()
			mu.Lock()
			versions[cs.InitializeResult().ProtocolVersion]++
			mu.Unlock()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || !slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "check_balance" }) {
				fail("client %d: tools/list: %v", i, err)
				return
			}
			for j := range calls {
				start := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "check_balance", Arguments: map[string]any{"account_id": "acc_123"}})
				d := time.Since(start)
				switch {
				case err != nil:
					fail("client %d call %d: %v", i, j, err)
				case res.IsError:
					fail("client %d call %d: a tool error: %s", i, j, mcpTextOf(res))
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	took := time.Since(began)
	slices.Sort(lat)
	q := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[int(p*float64(len(lat)-1))]
	}
	fig.add("g) MCP through the balancer, stateless /mcp: %d go-sdk clients at their defaults (protocols %v), each tools/list then %d check_balance calls, %d calls in %s (%.0f calls/s); HTTP requests per instance %v; call latency p50 %s, p99 %s, max %s",
		clients, versions, calls, len(lat), took.Round(time.Millisecond), float64(len(lat))/took.Seconds(), per, ms(q(0.5)), ms(q(0.99)), ms(q(1)))
	total := 0
	for _, n := range per {
		total += n
	}
	for _, in := range []string{"0", "1", "2"} {
		if per[in] < total/6 {
			t.Errorf("instance %s served %d of %d MCP requests", in, per[in], total)
		}
	}
	report(t, "MCP calls not answered", bad)
}

// mcpTextOf is the text of a tool result, for failure messages.
func mcpTextOf(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}
