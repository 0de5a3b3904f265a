package mcpx_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap/mcpx"
)

// connectVersion opens a go-sdk client session to endpoint asking for the
// protocol version (empty: the client's defaults), and checks that it is
// the version the session speaks.
func connectVersion(t *testing.T, endpoint, version string, token func() string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1.0.0"}, opts)
	cs, err := c.Connect(timeout(t), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: bearer(token), MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect at %q: %v", version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	want := version
	if want == "" {
		want = mcp.SupportedProtocolVersions()[0]
	}
	if got := cs.InitializeResult().ProtocolVersion; got != want {
		t.Fatalf("the session speaks %s, want %s", got, want)
	}
	return cs
}

// versions are the protocol versions the SDK's client speaks, newest
// first, and "" for the client's defaults.
func versions() []string { return append([]string{""}, mcp.SupportedProtocolVersions()...) }

// TestHTTPProtocolVersions drives the stateless HTTP endpoint with the
// go-sdk client at every protocol version it speaks, and at its defaults
// (the newest, 2026-07-28): it connects, lists and calls tools, and
// confirms a call, by the user's answer to the tool result's input
// request on 2026-07-28 and by preview and token on older versions, where
// a stateless server cannot ask during the call.
func TestHTTPProtocolVersions(t *testing.T) {
	if got := mcp.SupportedProtocolVersions()[0]; got != "2026-07-28" {
		t.Fatalf("the SDK's newest protocol version is %s", got)
	}
	var paid atomic.Int32
	s := confirmServer(t, &paid)
	ln, base := listen(t)
	routers[0].serve(t, ln, s)
	endpoint := base + "/mcp"
	alice := func() string { return "alice" }
	for _, version := range versions() {
		name := version
		if name == "" {
			name = "defaults"
		}
		t.Run(name, func(t *testing.T) {
			cs := connectVersion(t, endpoint, version, alice, nil)
			res, err := cs.ListTools(timeout(t), nil)
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			if got := names(res.Tools); !slices.Equal(got, []string{"echo", "pay"}) {
				t.Errorf("tools %v", got)
			}
			call, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
			if err != nil || call.IsError || text(t, call) != `{"message":"hi","by":"alice"}` {
				t.Fatalf("echo: %v %v", err, call)
			}

			// Without elicitation: the preview and a token, sent back.
			before := paid.Load()
			call, err = callPay(t, cs, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			conf, _ := envelopeOf(t, call)["confirmation"].(map[string]any)
			call, err = callPay(t, cs, 10, mcp.Meta{mcpx.MetaConfirmationToken: conf["token"]})
			if err != nil || call.IsError || !strings.Contains(text(t, call), `"paid"`) {
				t.Fatalf("confirmed by token: %v %v", err, call)
			}

			// With elicitation: asked in the result on 2026-07-28, the
			// preview and a token before.
			e := &elicitor{action: "accept"}
			eliciting := connectVersion(t, endpoint, version, alice, &mcp.ClientOptions{ElicitationHandler: e.handle})
			call, err = callPay(t, eliciting, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			if version == "" || version >= "2026-07-28" {
				if call.IsError || len(e.requests()) != 1 || !strings.Contains(text(t, call), `"paid"`) {
					t.Fatalf("by elicitation: %s (%d requests)", text(t, call), len(e.requests()))
				}
			} else if env := envelopeOf(t, call); env["error"] != "confirmation_required" || len(e.requests()) != 0 {
				t.Fatalf("an eliciting client on %s: %v (%d requests)", version, env, len(e.requests()))
			}
			want := int32(1)
			if version == "" || version >= "2026-07-28" {
				want = 2
			}
			if got := paid.Load() - before; got != want {
				t.Errorf("%d payments, want %d", got, want)
			}
		})
	}
}

// TestHTTPCancellation: a client that gives up on a call closes its
// response stream, which cancels the call, at every protocol version.
func TestHTTPCancellation(t *testing.T) {
	f := newOIDCFixture(t, routers[0], nil)
	alice := func() string { return f.iss.token(t, "alice", f.resource, time.Hour) }
	for _, version := range versions() {
		t.Run("protocol "+version, func(t *testing.T) {
			cs := connectVersion(t, f.resource, version, alice, nil)
			cancelsSlowCall(t, timeout(t), cs, f.probe)
		})
	}
}

// TestHTTPRawProtocol speaks 2026-07-28 in plain JSON-RPC over HTTP:
// server/discover names it, and a request carrying it in its header and
// _meta is answered, with no initialize and no session.
func TestHTTPRawProtocol(t *testing.T) {
	var paid atomic.Int32
	s := confirmServer(t, &paid)
	ln, base := listen(t)
	routers[0].serve(t, ln, s)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"curl","version":"1"}}`
	// rpc sends one request, with the headers 2026-07-28 wants: the
	// version, the method and, for a call, the tool's name.
	rpc := func(method, tool, body string) map[string]any {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer alice")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		if tool != "" {
			req.Header.Set("Mcp-Name", tool)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") != "" {
			t.Fatalf("%s: %d %s (session %q)", body, resp.StatusCode, raw, resp.Header.Get("Mcp-Session-Id"))
		}
		// The answer is one server-sent event, or plain JSON.
		data := string(raw)
		if i := strings.Index(data, "data: "); i >= 0 {
			data = strings.TrimSpace(strings.SplitN(data[i+len("data: "):], "\n", 2)[0])
		}
		var msg map[string]any
		if err := json.Unmarshal([]byte(data), &msg); err != nil {
			t.Fatalf("%s: %v in %s", body, err, raw)
		}
		if msg["error"] != nil {
			t.Fatalf("%s: %v", body, msg["error"])
		}
		return msg
	}
	disc := rpc("server/discover", "", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}`)
	result, _ := disc["result"].(map[string]any)
	supported, _ := result["supportedVersions"].([]any)
	if !slices.Contains(supported, any("2026-07-28")) || !slices.Contains(supported, any("2024-11-05")) {
		t.Errorf("server/discover: %v", disc)
	}
	list := rpc("tools/list", "", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+meta+`}}`)
	if tools, _ := list["result"].(map[string]any)["tools"].([]any); len(tools) != 2 {
		t.Errorf("tools/list: %v", list)
	}
	call := rpc("tools/call", "echo", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},`+meta+`}}`)
	if got, _ := json.Marshal(call["result"].(map[string]any)["structuredContent"]); string(got) != `{"by":"alice","message":"hi"}` {
		t.Errorf("tools/call: %v", call)
	}
}
