package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/core"
)

// mcpSession runs `agentcap mcp` on an in-memory transport and connects a
// go-sdk client to it; changed receives each tools/list_changed.
func mcpSession(t *testing.T, state string, args ...string) (cs *mcp.ClientSession, changed chan struct{}, stderr *bytes.Buffer) {
	t.Helper()
	return mcpSessionWith(t, state, mcp.ClientOptions{}, args...)
}

// mcpSessionWith is mcpSession for a host with opts (an elicitation
// handler, say).
func mcpSessionWith(t *testing.T, state string, opts mcp.ClientOptions, args ...string) (cs *mcp.ClientSession, changed chan struct{}, stderr *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	stderr = &bytes.Buffer{}
	c := &cli{stdout: &bytes.Buffer{}, stderr: stderr, getenv: func(k string) string {
		if k == "AGENTCAP_STATE" {
			return state
		}
		return ""
	}, clientConfig: func(cfg *client.Config) {
		cfg.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	}, mcpTransport: st}
	done := make(chan int, 1)
	go func() { done <- c.run(ctx, append([]string{"mcp"}, args...)) }()
	changed = make(chan struct{}, 8)
	opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("agentcap mcp did not stop")
		}
	})
	return cs, changed, stderr
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, tl := range res.Tools {
		n = append(n, tl.Name)
	}
	slices.Sort(n)
	return n
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: content %v", name, res.Content)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func waitChanged(t *testing.T, changed chan struct{}) {
	t.Helper()
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("no tools/list_changed")
	}
}

var lifecycleTools = []string{"agentcap_connect", "agentcap_disconnect", "agentcap_discover",
	"agentcap_list_capabilities", "agentcap_request_capabilities", "agentcap_status"}

func TestMCP(t *testing.T) {
	p := newProvider(t)
	p.pending = true
	state := t.TempDir()
	cs, changed, stderr := mcpSession(t, state, "--insecure-loopback", "--refresh", "0")

	if got := toolNames(t, cs); !slices.Equal(got, lifecycleTools) {
		t.Fatalf("tools before connecting: %v", got)
	}
	out, isErr := call(t, cs, "agentcap_discover", map[string]any{"url": p.URL})
	if isErr || !strings.Contains(out, `"provider_name":"test"`) || !strings.Contains(out, `"connected":false`) {
		t.Errorf("discover: %v %s", isErr, out)
	}

	// Connecting returns the approval to show the user at once, and the
	// tools follow once it is granted.
	out, isErr = call(t, cs, "agentcap_connect", map[string]any{"url": p.URL, "capabilities": []string{"echo"}, "reason": "testing"})
	var ap approvalOut
	if err := json.Unmarshal([]byte(out), &ap); err != nil || isErr {
		t.Fatalf("connect: %v %s", isErr, out)
	}
	if ap.Status != "pending" || ap.Approval == nil || ap.Approval.UserCode != "WXYZ-0000" || ap.Approval.VerificationURI != p.URL+"/device" ||
		!strings.Contains(ap.Message, "WXYZ-0000") {
		t.Errorf("connect: %+v", ap)
	}
	waitChanged(t, changed)
	if got := toolNames(t, cs); !slices.Contains(got, "test__echo") {
		t.Fatalf("tools after approval: %v\n%s", got, stderr)
	}

	out, isErr = call(t, cs, "test__echo", map[string]any{"message": "hi"})
	if isErr || out != `{"message":"hi"}` {
		t.Errorf("echo: %v %s", isErr, out)
	}
	// The provider's refusal is a tool result with its code and message.
	out, isErr = call(t, cs, "test__echo", map[string]any{"message": 5})
	if !isErr || !strings.Contains(out, `"error":"invalid_request"`) || !strings.Contains(out, `"message":`) {
		t.Errorf("bad arguments: %v %s", isErr, out)
	}

	out, isErr = call(t, cs, "agentcap_status", map[string]any{})
	var st statusOut
	if err := json.Unmarshal([]byte(out), &st); err != nil || isErr || len(st.Agents) != 1 || st.Agents[0].Status != "active" ||
		!slices.Contains(st.Tools, "test__echo") || len(st.Pending) != 0 {
		t.Errorf("status: %v %s", isErr, out)
	}
	out, isErr = call(t, cs, "agentcap_list_capabilities", map[string]any{})
	if isErr || !strings.Contains(out, `"tool":"test__echo"`) || !strings.Contains(out, `"grant_status":"granted"`) {
		t.Errorf("list: %v %s", isErr, out)
	}

	// Errors of lifecycle tools are results too.
	out, isErr = call(t, cs, "agentcap_request_capabilities", map[string]any{"url": "http://127.0.0.1:1", "capabilities": []string{"x"}})
	if !isErr || !strings.Contains(out, "agentcap_connect") {
		t.Errorf("request at an unknown provider: %v %s", isErr, out)
	}

	out, isErr = call(t, cs, "agentcap_disconnect", map[string]any{"url": p.URL})
	if isErr || !strings.Contains(out, `"status":"revoked"`) {
		t.Errorf("disconnect: %v %s", isErr, out)
	}
	waitChanged(t, changed)
	if got := toolNames(t, cs); !slices.Equal(got, lifecycleTools) {
		t.Errorf("tools after disconnecting: %v", got)
	}
}

// TestMCPServesStoredConnections starts on connections made before: the
// provider's tools are there from the first tools/list, and --url picks
// providers.
func TestMCPServesStoredConnections(t *testing.T) {
	p := newProvider(t)
	state := t.TempDir()
	if code, out, errOut := agentcap(t, state, "connect", p.URL, "--insecure-loopback", "--capability", "echo"); code != 0 {
		t.Fatalf("connect: %d %s %s", code, out, errOut)
	}
	cs, _, _ := mcpSession(t, state, "--insecure-loopback", "--url", p.URL)
	if got := toolNames(t, cs); !slices.Contains(got, "test__echo") {
		t.Errorf("tools: %v", got)
	}
	cs2, _, _ := mcpSession(t, state, "--insecure-loopback", "--url", "http://127.0.0.1:1")
	if got := toolNames(t, cs2); !slices.Equal(got, lifecycleTools) {
		t.Errorf("tools for another provider: %v", got)
	}
}

// TestMCPToolsTitledAndAnnotated: the bridge's tools carry the titles and
// hints the application's own MCP endpoint gives the same capabilities:
// a declared title or one made of the name, readOnlyHint for a low-risk
// read-only capability, destructiveHint for the others.
func TestMCPToolsTitledAndAnnotated(t *testing.T) {
	p := newProviderWith(t, []core.Definer{
		core.MustDefine("echo", "Echo a message.",
			func(_ context.Context, _ struct{}, in echoIn) (echoIn, error) { return in, nil },
			core.WithTitle("Echo a message"), core.WithReadOnly()),
		core.MustDefine("wipe_log", "Wipe a log.",
			func(_ context.Context, _ struct{}, in echoIn) (echoIn, error) { return in, nil },
			core.WithRisk(core.RiskHigh)),
		core.MustDefine("note_down", "Note a message.",
			func(_ context.Context, _ struct{}, in echoIn) (echoIn, error) { return in, nil }),
	})
	state := t.TempDir()
	if code, out, errOut := agentcap(t, state, "connect", p.URL, "--insecure-loopback",
		"--capability", "echo", "--capability", "wipe_log", "--capability", "note_down"); code != 0 {
		t.Fatalf("connect: %d %s %s", code, out, errOut)
	}
	cs, _, _ := mcpSession(t, state, "--insecure-loopback", "--url", p.URL)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		got[tl.Name] = tl
	}
	no, yes := false, true
	for name, want := range map[string]*mcp.ToolAnnotations{
		"test__echo":      {Title: "Echo a message", ReadOnlyHint: true},
		"test__wipe_log":  {Title: "Wipe log", DestructiveHint: &yes},
		"test__note_down": {Title: "Note down", DestructiveHint: &no},
	} {
		tl := got[name]
		if tl == nil {
			t.Errorf("no tool %s among %v", name, toolNames(t, cs))
			continue
		}
		if tl.Title != want.Title {
			t.Errorf("%s: title %q, want %q", name, tl.Title, want.Title)
		}
		if diff := cmp.Diff(want, tl.Annotations); diff != "" {
			t.Errorf("%s annotations (-want +got):\n%s", name, diff)
		}
	}
}
