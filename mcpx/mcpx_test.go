package mcpx_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap/mcpx"
)

// connect opens a go-sdk client session to endpoint, authenticating every
// HTTP request with token.
func connect(t testing.TB, endpoint string, token func() string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1.0.0"}, opts)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: bearer(token), MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func timeout(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// listAll pages through tools/list, checking that no page is larger than
// the fixture's page size.
func listAll(t *testing.T, cs *mcp.ClientSession) []*mcp.Tool {
	t.Helper()
	var all []*mcp.Tool
	cursor := ""
	for range 10 {
		res, err := cs.ListTools(timeout(t), &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		if len(res.Tools) > 2 {
			t.Errorf("a page of %d tools; the page size is 2", len(res.Tools))
		}
		all = append(all, res.Tools...)
		if res.NextCursor == "" {
			return all
		}
		cursor = res.NextCursor
	}
	t.Fatal("tools/list does not end")
	return nil
}

func names(tools []*mcp.Tool) []string {
	var n []string
	for _, tl := range tools {
		n = append(n, tl.Name)
	}
	return n
}

func schemaJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content %v, want one text", res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T, want text", res.Content[0])
	}
	return tc.Text
}

func ptr[T any](v T) *T { return &v }

// TestStreamableHTTP drives the server with the go-sdk client over
// Streamable HTTP, mounted on each router.
func TestStreamableHTTP(t *testing.T) {
	for _, r := range routers {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			f := newOIDCFixture(t, r, nil)
			alice := func() string { return f.iss.token(t, "alice", f.resource, time.Hour) }
			root := func() string { return f.iss.token(t, "root", f.resource, time.Hour) }

			t.Run("list", func(t *testing.T) {
				tools := listAll(t, connect(t, f.resource, alice, nil))
				if diff := cmp.Diff([]string{"echo", "list_items", "slow", "transfer"}, names(tools)); diff != "" {
					t.Errorf("alice's tools (-want +got):\n%s", diff)
				}
				byName := map[string]*mcp.Tool{}
				for _, tl := range tools {
					byName[tl.Name] = tl
				}
				echo := byName["echo"]
				if echo.Title != "Echo a message" || echo.Description != "Say the message back." {
					t.Errorf("echo title %q, description %q", echo.Title, echo.Description)
				}
				if got := schemaJSON(t, echo.InputSchema); !strings.Contains(got, `"message"`) || !strings.Contains(got, `"minLength":1`) {
					t.Errorf("echo input schema %s", got)
				}
				if got := schemaJSON(t, echo.OutputSchema); !strings.Contains(got, `"by"`) {
					t.Errorf("echo output schema %s", got)
				}
				// A list is not an object: its schema is wrapped.
				var wrapped struct {
					Type       string
					Required   []string
					Properties map[string]struct{ Type string }
				}
				got := schemaJSON(t, byName["list_items"].OutputSchema)
				if err := json.Unmarshal([]byte(got), &wrapped); err != nil || wrapped.Type != "object" ||
					!slices.Equal(wrapped.Required, []string{"result"}) || wrapped.Properties["result"].Type != "array" {
					t.Errorf("list_items output schema %s", got)
				}
				annotations := []struct {
					name             string
					readOnly         bool
					destructive      *bool
					title            string
					wantAnnotateTitl string
				}{
					{"echo", true, nil, "Echo a message", "Echo a message"},
					{"list_items", true, nil, "List items", "List items"},
					{"slow", false, ptr(false), "Slow", "Slow"},
					{"transfer", false, ptr(true), "Transfer", "Transfer"},
				}
				for _, a := range annotations {
					got := byName[a.name].Annotations
					want := &mcp.ToolAnnotations{ReadOnlyHint: a.readOnly, DestructiveHint: a.destructive, Title: a.wantAnnotateTitl}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s annotations (-want +got):\n%s", a.name, diff)
					}
				}
				// An administrator sees the secret capability too.
				if got := names(listAll(t, connect(t, f.resource, root, nil))); !slices.Contains(got, "secret") {
					t.Errorf("root's tools %v lack secret", got)
				}
				cs := connect(t, f.resource, alice, nil)
				if _, err := cs.ListTools(timeout(t), &mcp.ListToolsParams{Cursor: "!!"}); !isProtocolError(err, jsonrpc.CodeInvalidParams) {
					t.Errorf("bad cursor: %v", err)
				}
			})

			t.Run("call", func(t *testing.T) {
				cs := connect(t, f.resource, alice, nil)
				res, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
				if err != nil {
					t.Fatal(err)
				}
				if res.IsError || text(t, res) != `{"message":"hi","by":"alice"}` {
					t.Errorf("echo: isError %v, text %q", res.IsError, text(t, res))
				}
				if diff := cmp.Diff(map[string]any{"message": "hi", "by": "alice"}, res.StructuredContent); diff != "" {
					t.Errorf("echo structured content (-want +got):\n%s", diff)
				}
				res, err = cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "list_items"})
				if err != nil {
					t.Fatal(err)
				}
				if text(t, res) != `[{"name":"a"},{"name":"b"}]` {
					t.Errorf("list_items text %q", text(t, res))
				}
				want := map[string]any{"result": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}}
				if diff := cmp.Diff(want, res.StructuredContent); diff != "" {
					t.Errorf("list_items structured content (-want +got):\n%s", diff)
				}
			})

			t.Run("typed errors", func(t *testing.T) {
				cs := connect(t, f.resource, alice, nil)
				tests := []struct {
					name     string
					tool     string
					args     any
					wantText string
				}{
					{"application error", "transfer", map[string]any{"amount": 500},
						`{"error":"insufficient_funds","message":"the balance is too low","balance":100}`},
					{"invalid input", "echo", map[string]any{"message": ""},
						`{"error":"invalid_request","message":"the arguments are invalid","errors":[{"path":"/message","message":"minLength: got 0, want 1"}]}`},
					{"unknown member", "echo", map[string]any{"message": "x", "Message": "y"},
						`"error":"invalid_request"`},
				}
				for _, tt := range tests {
					res, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
					if err != nil {
						t.Fatalf("%s: %v", tt.name, err)
					}
					got := text(t, res)
					if !res.IsError || !strings.Contains(got, tt.wantText) {
						t.Errorf("%s: isError %v, text %s, want %s", tt.name, res.IsError, got, tt.wantText)
					}
					if res.StructuredContent != nil {
						t.Errorf("%s: an error result carries structured content %v", tt.name, res.StructuredContent)
					}
					meta, ok := res.Meta[mcpx.MetaError].(map[string]any)
					if !ok || meta["error"] == nil || meta["message"] == nil {
						t.Errorf("%s: _meta %v", tt.name, res.Meta)
					}
				}
				protocol := []struct {
					name string
					tool string
					args any
				}{
					{"unknown tool", "nope", nil},
					{"hidden tool", "secret", nil},
					{"arguments not an object", "echo", []string{"hi"}},
				}
				for _, tt := range protocol {
					_, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
					if !isProtocolError(err, jsonrpc.CodeInvalidParams) {
						t.Errorf("%s: %v, want invalid params", tt.name, err)
					}
				}
			})

			t.Run("cancellation", func(t *testing.T) {
				if r.name == "fiber" {
					// Over stateless HTTP a client cancels by closing the
					// response stream, and Fiber notices a closed
					// connection only at the next write (see fiberx.MountMCP):
					// the slow call writes nothing.
					t.Skip("Fiber does not notice a client that goes away while nothing is written")
				}
				cs := connect(t, f.resource, alice, nil)
				cancelsSlowCall(t, timeout(t), cs, f.probe)
			})

			t.Run("progress", func(t *testing.T) {
				got := make(chan string, 2)
				cs := connect(t, f.resource, alice, &mcp.ClientOptions{
					ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
						if r.Params.ProgressToken == "t1" {
							got <- r.Params.Message
						}
					},
				})
				p := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}
				p.SetProgressToken("t1")
				if _, err := cs.CallTool(timeout(t), p); err != nil {
					t.Fatal(err)
				}
				// The client hands notifications to its handler on a
				// goroutine of its own, so they may follow the result.
				for _, want := range []string{"heard", "said"} {
					select {
					case m := <-got:
						if m != want {
							t.Errorf("progress %q, want %q", m, want)
						}
					case <-time.After(10 * time.Second):
						t.Fatalf("no progress notification %q", want)
					}
				}
			})

			t.Run("authentication", func(t *testing.T) {
				other := newIssuer(t)
				metadata := f.base + "/.well-known/oauth-protected-resource/mcp"
				const (
					noCredentials = `{"error":"authentication_required","message":"authentication is required"}` + "\n"
					invalid       = `{"error":"invalid_jwt","message":"the credentials are invalid"}` + "\n"
				)
				tests := []struct {
					name      string
					auth      string
					status    int
					challenge string
					body      string
				}{
					// The fixture's ScopesSupported are the scope to ask for.
					{"no token", "", 401, `Bearer scope="tools", resource_metadata="` + metadata + `"`, noCredentials},
					{"another scheme", "Basic YWxpY2U6c2VjcmV0", 401, `Bearer scope="tools", resource_metadata="` + metadata + `"`, noCredentials},
					{"expired", "Bearer " + f.iss.token(t, "alice", f.resource, -time.Minute), 401,
						`Bearer error="invalid_token", scope="tools", resource_metadata="` + metadata + `"`, invalid},
					{"wrong audience", "Bearer " + f.iss.token(t, "alice", f.base+"/other", time.Hour), 401,
						`Bearer error="invalid_token", scope="tools", resource_metadata="` + metadata + `"`, invalid},
					{"wrong issuer", "Bearer " + other.token(t, "alice", f.resource, time.Hour), 401,
						`Bearer error="invalid_token", scope="tools", resource_metadata="` + metadata + `"`, invalid},
					{"refused by the application", "Bearer " + f.iss.token(t, "suspended", f.resource, time.Hour), 403, "",
						`{"error":"account_suspended","message":"the account is suspended"}` + "\n"},
				}
				for _, tt := range tests {
					resp := post(t, f.resource, tt.auth, "", initialize)
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != tt.status || resp.Header.Get("WWW-Authenticate") != tt.challenge {
						t.Errorf("%s: %d %q %s, want %d %q", tt.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body, tt.status, tt.challenge)
					}
					if string(body) != tt.body || resp.Header.Get("Content-Type") != "application/json" {
						t.Errorf("%s: body %q (%s), want %q", tt.name, body, resp.Header.Get("Content-Type"), tt.body)
					}
					// The go-sdk client cannot connect either.
					c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1.0.0"}, nil)
					hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
						r = r.Clone(r.Context())
						if tt.auth != "" {
							r.Header.Set("Authorization", tt.auth)
						}
						return http.DefaultTransport.RoundTrip(r)
					})}
					if cs, err := c.Connect(timeout(t), &mcp.StreamableClientTransport{Endpoint: f.resource, HTTPClient: hc, MaxRetries: -1}, nil); err == nil {
						cs.Close()
						t.Errorf("%s: the client connected", tt.name)
					}
				}
			})

			t.Run("resource metadata", func(t *testing.T) {
				for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
					resp, err := http.Get(f.base + path)
					if err != nil {
						t.Fatal(err)
					}
					var doc map[string]any
					err = json.NewDecoder(resp.Body).Decode(&doc)
					resp.Body.Close()
					if err != nil || resp.StatusCode != 200 {
						t.Fatalf("%s: %d %v", path, resp.StatusCode, err)
					}
					want := map[string]any{
						"resource":                 f.resource,
						"authorization_servers":    []any{f.iss.URL},
						"scopes_supported":         []any{"tools"},
						"bearer_methods_supported": []any{"header"},
						"resource_name":            "fixture",
					}
					if diff := cmp.Diff(want, doc); diff != "" {
						t.Errorf("%s (-want +got):\n%s", path, diff)
					}
				}
			})

			t.Run("stateless and origins", func(t *testing.T) {
				// No session is opened: nothing to steal, nothing to route by.
				resp := post(t, f.resource, "Bearer "+alice(), "", initialize)
				resp.Body.Close()
				if resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") != "" {
					t.Fatalf("initialize: %d, session %q", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
				}
				// A session id a client makes up carries nothing: root's
				// request is served as root's.
				req, _ := http.NewRequest(http.MethodPost, f.resource, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"secret"}}`))
				req.Header.Set("Authorization", "Bearer "+root())
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Session-Id", "alices-session")
				req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.Contains(string(body), `{\"done\":true}`) {
					t.Errorf("root with a made-up session id: %d %s", resp.StatusCode, body)
				}
				// There is no server stream to open and no session to end.
				for _, method := range []string{http.MethodGet, http.MethodDelete} {
					req, _ := http.NewRequest(method, f.resource, nil)
					req.Header.Set("Authorization", "Bearer "+alice())
					req.Header.Set("Accept", "text/event-stream")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
						t.Errorf("%s: %d, Allow %q", method, resp.StatusCode, resp.Header.Get("Allow"))
					}
				}
				// A page of another origin is refused.
				req, _ = http.NewRequest(http.MethodPost, f.resource, strings.NewReader(initialize))
				req.Header.Set("Authorization", "Bearer "+alice())
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Origin", "http://evil.example")
				resp, err = http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusForbidden {
					t.Errorf("foreign origin: %d", resp.StatusCode)
				}
				// A name that resolves to the loopback listener but is not
				// a loopback name is DNS rebinding: refused.
				req, _ = http.NewRequest(http.MethodPost, f.resource, strings.NewReader(initialize))
				req.Host = "rebound.example"
				req.Header.Set("Authorization", "Bearer "+alice())
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err = http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusForbidden {
					t.Errorf("foreign host name on loopback: %d", resp.StatusCode)
				}
				// A body over the limit is refused.
				big := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"` + strings.Repeat("x", 2<<20) + `"}}}`
				resp = post(t, f.resource, "Bearer "+alice(), "2025-06-18", big)
				resp.Body.Close()
				if resp.StatusCode != http.StatusRequestEntityTooLarge {
					t.Errorf("oversized body: %d", resp.StatusCode)
				}
			})

			t.Run("duplicate members", func(t *testing.T) {
				const v = "2025-06-18"
				// A gateway reading the first of two members and the SDK
				// reading the last would see different calls: every such
				// message is refused before it reaches the SDK.
				tests := []struct{ name, version, body string }{
					{"tool name", v, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","name":"transfer","arguments":{"message":"hi","amount":5}}}`},
					{"arguments", v, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"transfer","arguments":{"amount":5},"arguments":{"amount":50}}}`},
					{"method", v, `{"jsonrpc":"2.0","id":2,"method":"tools/list","method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`},
					{"nested in _meta", v, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{"a":{"b":1,"b":2}}}}`},
					{"id", v, `{"jsonrpc":"2.0","id":2,"id":3,"method":"tools/list"}`},
					{"initialize", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`},
				}
				for _, tt := range tests {
					resp := post(t, f.resource, "Bearer "+alice(), tt.version, tt.body)
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					var msg struct {
						ID    any `json:"id"`
						Error struct {
							Code    int64  `json:"code"`
							Message string `json:"message"`
						} `json:"error"`
					}
					if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(body, &msg) != nil ||
						msg.Error.Code != jsonrpc.CodeParseError || msg.ID != nil || !strings.Contains(msg.Error.Message, "twice") {
						t.Errorf("%s: %d %s, want 400 with a JSON-RPC parse error", tt.name, resp.StatusCode, body)
					}
				}
				// The same call without the repeated member runs.
				resp := post(t, f.resource, "Bearer "+alice(), v, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.Contains(string(body), `\"by\":\"alice\"`) {
					t.Errorf("a well-formed call: %d %s", resp.StatusCode, body)
				}
			})
		})
	}
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`

// post sends one raw MCP message, with the MCP-Protocol-Version header
// when version is not empty.
func post(t *testing.T, url, auth, version, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func isProtocolError(err error, code int64) bool {
	var je *jsonrpc.Error
	return errors.As(err, &je) && je.Code == code
}
