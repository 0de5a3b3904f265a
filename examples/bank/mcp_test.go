package main_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// mcpClient connects the go-sdk client to the bank's MCP endpoint, signing
// a fresh agent JWT (aud: the endpoint) for every HTTP request with sign.
func mcpClient(t *testing.T, endpoint string, sign func() string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: mcpRoundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+sign())
		return http.DefaultTransport.RoundTrip(r)
	})}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

type mcpRoundTripper func(*http.Request) (*http.Response, error)

func (f mcpRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func mcpText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content %v", res.Content)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// TestMCPEndpoint drives the bank's /mcp, the capabilities served over
// MCP to the agents of its directory.
func TestMCPEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the bank")
	}
	f := newFixture(t)
	p := startBank(t, buildBank(t), f.file)
	endpoint := p.url + "/mcp"
	alice := f.agents["agt_alice"]
	cs := mcpClient(t, endpoint, func() string { return alice.Token(agentauthtest.Token{Audience: endpoint}) })

	ctx := context.Background()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if tl.Name == "check_balance" && (tl.Annotations == nil || !tl.Annotations.ReadOnlyHint) {
			t.Errorf("check_balance annotations %+v", tl.Annotations)
		}
		if tl.Name == "transfer_money" && (tl.Annotations == nil || tl.Annotations.DestructiveHint == nil || !*tl.Annotations.DestructiveHint) {
			t.Errorf("transfer_money annotations %+v", tl.Annotations)
		}
	}
	if strings.Join(names, ",") != "check_balance,exchange_rate,list_accounts,statement_export,transfer_money" {
		t.Errorf("tools %v", names)
	}

	calls := []struct {
		tool    string
		args    map[string]any
		isError bool
		want    string
	}{
		{"check_balance", map[string]any{"account_id": "acc_123"}, false, `{"account_id":"acc_123","balance":5000,"currency":"USD"}`},
		{"check_balance", map[string]any{"account_id": "acc_456"}, true, `{"error":"account_not_found","message":"no such account among the user's accounts"}`},
		{"transfer_money", map[string]any{"source_account": "acc_123", "destination_account": "acc_456", "amount": 1500, "currency": "USD"}, true, `{"error":"constraint_violated"`},
		{"list_accounts", nil, false, `[{"account_id":"acc_123"`},
	}
	for _, c := range calls {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		if got := mcpText(t, res); res.IsError != c.isError || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %v: isError %v, %s", c.tool, c.args, res.IsError, got)
		}
	}

	// A token made for the capability location is not one for /mcp.
	st, hdr, body := roundTrip(t, p.client, p.url, http.MethodPost, "/mcp", alice.Token(agentauthtest.Token{Audience: p.url + "/capability/execute"}),
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if st != http.StatusUnauthorized || !strings.Contains(hdr.Get("WWW-Authenticate"), `resource_metadata="`+p.url+`/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("token for another audience: %d %q %s", st, hdr.Values("WWW-Authenticate"), body)
	}
	st, _, body = roundTrip(t, p.client, p.url, http.MethodGet, "/.well-known/oauth-protected-resource/mcp", "", "")
	if st != http.StatusOK || !strings.Contains(string(body), `"resource":"`+endpoint+`"`) {
		t.Errorf("resource metadata: %d %s", st, body)
	}
}
