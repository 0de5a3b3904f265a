package mcpx_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/mcpx"
)

// grants is the step-up fixture's Authorizer: echo and transfer are
// granted, list_items and secret are not, slow has no status. A call of a
// capability not granted is refused as an Agent Auth agent's is.
var grants = &authorizer{
	authorize: func(_ context.Context, call *auth.Call) error {
		if call.Capability == "list_items" || call.Capability == "secret" {
			return agentcap.NewError(agentcap.CodeCapabilityNotGranted, "no grant for "+call.Capability)
		}
		return nil
	},
	grant: func(capability string) string {
		switch capability {
		case "echo", "transfer":
			return "granted"
		case "list_items", "secret":
			return "not_granted"
		}
		return ""
	},
}

// stepUpFixture is an MCP endpoint on loopback whose verifier knows three
// callers by their token: "oauth", whose scopes are its grants; "agent",
// with the same grants but no scope challenge; "bare", whose scopes are
// its grants but which has no Authorizer.
type stepUpFixture struct {
	base, resource string
}

func newStepUpFixture(t *testing.T, cfg func(*mcpx.Config)) *stepUpFixture {
	t.Helper()
	ln, base := listen(t)
	f := &stepUpFixture{base: base, resource: base + "/mcp"}
	verifier := auth.VerifierFunc(func(_ context.Context, req *auth.Request) (*auth.Identity, error) {
		switch req.Authorization {
		case "Bearer oauth":
			return &auth.Identity{Subject: "agt_o", AgentID: "agt_o", UserID: "alice", Authorizer: grants, ScopeChallenge: true}, nil
		case "Bearer agent":
			return &auth.Identity{Subject: "agt_a", AgentID: "agt_a", UserID: "alice", Authorizer: grants}, nil
		case "Bearer bare":
			return &auth.Identity{Subject: "bob", UserID: "bob", ScopeChallenge: true}, nil
		case "":
			return nil, auth.ErrNoCredentials
		}
		return nil, agentcap.NewError(agentcap.CodeInvalidJWT, "the credentials are invalid")
	})
	c := mcpx.Config{Verifier: verifier, Resource: f.resource}
	if cfg != nil {
		cfg(&c)
	}
	// secret is hidden from everybody but root: an unknown tool to these
	// callers, whatever its grant status.
	s, err := mcpx.New(newExecutor(t, newProbe(), adminOnly), c)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Handle(mux, "/mcp")
	serveHTTP(t, ln, mux)
	return f
}

func (f *stepUpFixture) metadataURL() string {
	return f.base + "/.well-known/oauth-protected-resource/mcp"
}

// grantStatus lists every tool of cs with its grant status.
func grantStatus(t *testing.T, cs *mcp.ClientSession) map[string]any {
	t.Helper()
	res, err := cs.ListTools(timeout(t), &mcp.ListToolsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if res.NextCursor != "" {
		t.Fatalf("more than one page of tools")
	}
	status := map[string]any{}
	for _, tl := range res.Tools {
		status[tl.Name] = tl.Meta[mcpx.MetaGrantStatus]
	}
	return status
}

// TestStepUp checks how a caller whose scopes are its grants is served:
// only granted tools are listed, granted tools run, and a call of a tool
// it may see but is not granted is answered with 403 and a Bearer
// insufficient_scope challenge naming the tool, which the go-sdk client
// reports as the JSON-RPC error of the call.
func TestStepUp(t *testing.T) {
	f := newStepUpFixture(t, nil)
	cs := connect(t, f.resource, func() string { return "oauth" }, nil)

	if diff := cmp.Diff(map[string]any{"echo": "granted", "transfer": "granted"}, grantStatus(t, cs)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	res, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil || res.IsError || text(t, res) != `{"message":"hi","by":"alice"}` {
		t.Fatalf("granted call: %v %v", res, err)
	}

	_, err = cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "list_items"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, `does not grant the tool "list_items"`) {
		t.Fatalf("a call not granted: %v", err)
	}
	var data map[string]any
	if err := json.Unmarshal(je.Data, &data); err != nil || data["error"] != "capability_not_granted" {
		t.Errorf("the error's data: %s", je.Data)
	}
	// The refusal did not break the client's connection.
	if res, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": 5}}); err != nil || res.IsError {
		t.Errorf("a granted call after the refusal: %v %v", res, err)
	}
	// An unknown tool and one the caller may not see are unknown tools,
	// whatever their grant status.
	for _, tool := range []string{"nope", "secret"} {
		if _, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: tool}); !isProtocolError(err, jsonrpc.CodeInvalidParams) ||
			!strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("%s: %v", tool, err)
		}
	}
}

// TestStepUpAnswer pins the 403 answer on the wire.
func TestStepUpAnswer(t *testing.T) {
	f := newStepUpFixture(t, nil)
	const description = `the access token does not grant this tool`
	challenge := `Bearer error="insufficient_scope", scope="list_items", resource_metadata="` + f.metadataURL() +
		`", error_description="` + description + `"`
	const msg = `the access token does not grant the tool \"list_items\": authorize the scope \"list_items\" and call again`
	for _, tt := range []struct{ name, id string }{
		{"number id", `7`},
		{"string id", `"call-7"`},
		{"negative id", `-3`},
	} {
		resp := post(t, f.resource, "Bearer oauth", "2025-06-18",
			`{"jsonrpc":"2.0","id":`+tt.id+`,"method":"tools/call","params":{"name":"list_items","arguments":{}}}`)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := `{"jsonrpc":"2.0","id":` + tt.id + `,"error":{"code":-32602,"message":"` + msg +
			`","data":{"error":"capability_not_granted","message":"` + msg + `"}}}` + "\n"
		if resp.StatusCode != http.StatusForbidden || string(body) != want {
			t.Errorf("%s: %d %s\nwant 403 %s", tt.name, resp.StatusCode, body, want)
		}
		if got := resp.Header.Values("WWW-Authenticate"); len(got) != 1 || got[0] != challenge {
			t.Errorf("%s: challenges %q\nwant %q", tt.name, got, challenge)
		}
		if resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: headers %v", tt.name, resp.Header)
		}
	}
	// A tool hidden from the caller (secret: shown to root alone) stays
	// an unknown tool, not granted though it is.
	resp := post(t, f.resource, "Bearer oauth", "2025-06-18", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"secret"}}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `unknown tool \"secret\"`) {
		t.Errorf("hidden tool: %d %s", resp.StatusCode, body)
	}
}

// TestStepUpLeavesOtherMessages checks that only one tools/call request
// of a tool not granted is refused with a challenge: anything else goes
// to the SDK as it is.
func TestStepUpLeavesOtherMessages(t *testing.T) {
	f := newStepUpFixture(t, nil)
	for _, tt := range []struct{ name, body string }{
		{"notification", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"list_items"}}`},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"list_items"}}`},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"list_items"}}`},
		{"id beyond a float64", `{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"list_items"}}`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_items"}}]`},
		{"name not a string", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":["list_items"]}}`},
		{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["list_items"]}`},
		{"method in another case", `{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"list_items"}}`},
		{"name in another case", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"list_items"}}`},
		{"another version", `{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"list_items"}}`},
		{"another method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"list_items"}}`},
		{"a response", `{"jsonrpc":"2.0","id":1,"result":{"name":"list_items"}}`},
		{"granted", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`},
		// Not listed, yet the Authorizer decides the call (here: arguments
		// that are not an object, refused before it runs).
		{"no grant status", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":5}}`},
		{"unknown tool", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}`},
	} {
		resp := post(t, f.resource, "Bearer oauth", "2025-06-18", tt.body)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusForbidden || resp.Header.Get("WWW-Authenticate") != "" {
			t.Errorf("%s: %d %q %s", tt.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
		}
	}
}

// TestStepUpOnlyForScopeChallenge checks that callers without
// ScopeChallenge are served as before: every visible tool listed with its
// grant status, a call not granted an error result; and that a caller
// with ScopeChallenge and no Authorizer, which may run all it sees, sees
// everything.
func TestStepUpOnlyForScopeChallenge(t *testing.T) {
	f := newStepUpFixture(t, nil)
	agent := connect(t, f.resource, func() string { return "agent" }, nil)
	want := map[string]any{"echo": "granted", "list_items": "not_granted", "slow": nil, "transfer": "granted"}
	if diff := cmp.Diff(want, grantStatus(t, agent)); diff != "" {
		t.Errorf("the agent's tools (-want +got):\n%s", diff)
	}
	res, err := agent.CallTool(timeout(t), &mcp.CallToolParams{Name: "list_items"})
	if err != nil || !res.IsError || text(t, res) != `{"error":"capability_not_granted","message":"no grant for list_items"}` {
		t.Errorf("the agent's call not granted: %v %v", res, err)
	}

	bare := connect(t, f.resource, func() string { return "bare" }, nil)
	want = map[string]any{"echo": nil, "list_items": nil, "slow": nil, "transfer": nil}
	if diff := cmp.Diff(want, grantStatus(t, bare)); diff != "" {
		t.Errorf("tools of a caller without an Authorizer (-want +got):\n%s", diff)
	}
	if res, err := bare.CallTool(timeout(t), &mcp.CallToolParams{Name: "list_items"}); err != nil || res.IsError {
		t.Errorf("a call without an Authorizer: %v %v", res, err)
	}
}

// TestStepUpOverStdio checks that a caller whose scopes are its grants
// is listed only granted tools over stdio as well, where a call not
// granted, which cannot be answered with an HTTP challenge, is the
// error result any caller gets.
func TestStepUpOverStdio(t *testing.T) {
	s, err := mcpx.New(newExecutor(t, newProbe(), adminOnly), mcpx.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cs := inMemory(t, s, &auth.Identity{Subject: "agt_o", UserID: "alice", Authorizer: grants, ScopeChallenge: true})
	if diff := cmp.Diff(map[string]any{"echo": "granted", "transfer": "granted"}, grantStatus(t, cs)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	res, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "list_items"})
	if err != nil || !res.IsError || !strings.HasPrefix(text(t, res), `{"error":"capability_not_granted"`) {
		t.Errorf("a call not granted: %v %v", res, err)
	}
}

// TestScopesInChallenge checks that Config.ScopesSupported are published
// in the resource metadata with the authorization servers, and named as
// the scope of every 401 challenge; and that a scope that cannot be one
// is refused.
func TestScopesInChallenge(t *testing.T) {
	const as = "https://login.example"
	f := newStepUpFixture(t, func(c *mcpx.Config) {
		c.AuthorizationServers = []string{as}
		c.ScopesSupported = []string{"echo", "list_items", "transfer"}
	})
	for _, tt := range []struct{ name, auth, challenge string }{
		{"no token", "", `Bearer scope="echo list_items transfer", resource_metadata="` + f.metadataURL() + `"`},
		{"invalid token", "Bearer forged", `Bearer error="invalid_token", scope="echo list_items transfer", resource_metadata="` + f.metadataURL() + `"`},
	} {
		resp := post(t, f.resource, tt.auth, "", initialize)
		resp.Body.Close()
		if got := resp.Header.Values("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || len(got) != 1 || got[0] != tt.challenge {
			t.Errorf("%s: %d %q\nwant %q", tt.name, resp.StatusCode, got, tt.challenge)
		}
	}
	resp, err := http.Get(f.metadataURL())
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("metadata: %d %v", resp.StatusCode, err)
	}
	want := map[string]any{
		"resource":                 f.resource,
		"authorization_servers":    []any{as},
		"scopes_supported":         []any{"echo", "list_items", "transfer"},
		"bearer_methods_supported": []any{"header"},
	}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}

	v := auth.VerifierFunc(func(context.Context, *auth.Request) (*auth.Identity, error) { return person("x"), nil })
	for _, scope := range []string{"", "two words", `a"quote`, `back\slash`, "line\r\nbreak", "é"} {
		_, err := mcpx.New(newExecutor(t, newProbe(), adminOnly), mcpx.Config{Verifier: v, Resource: "https://x.example/mcp",
			ScopesSupported: []string{"echo", scope}})
		if err == nil || !strings.Contains(err.Error(), "ScopesSupported") {
			t.Errorf("scope %q: %v", scope, err)
		}
	}
}
