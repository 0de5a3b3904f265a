//go:build mcpinterop

package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap/examples/internal/issues"
	"github.com/agentcap/agentcap/mcpx"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// The MCP interop suite drives the bank's /mcp, agentcap's own MCP
// server and mcpx with the official TypeScript MCP SDK client and the MCP
// Inspector CLI, installed by interop/mcp/run.sh, which names their folder
// in AGENTCAP_MCP_INTEROP.

func interopDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("AGENTCAP_MCP_INTEROP")
	if dir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("AGENTCAP_MCP_INTEROP is not set: run interop/mcp/run.sh")
		}
		t.Skip("AGENTCAP_MCP_INTEROP is not set: run interop/mcp/run.sh")
	}
	return dir
}

// node runs a Node script of the interop folder and returns its standard
// output; a failure shows its standard error.
func node(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out
}

// tokenServer serves a fresh agent JWT on every GET, for client.mjs.
func tokenServer(t *testing.T, sign func() (string, error)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		tok, err := sign()
		if err != nil {
			t.Errorf("signing: %v", err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, tok)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type tsCall struct {
	Name              string         `json:"name"`
	IsError           bool           `json:"isError"`
	Text              string         `json:"text"`
	StructuredContent map[string]any `json:"structuredContent"`
}

type tsServerRun struct {
	Server                string `json:"server"`
	ProtocolVersion       string `json:"protocolVersion"`
	LatestProtocolVersion string `json:"latestProtocolVersion"`
	SessionID             string `json:"sessionId"`
	Tools                 []struct {
		Name         string         `json:"name"`
		Title        string         `json:"title"`
		Annotations  map[string]any `json:"annotations"`
		OutputSchema bool           `json:"outputSchema"`
	} `json:"tools"`
	Calls   []tsCall `json:"calls"`
	Unknown *struct {
		Code int `json:"code"`
	} `json:"unknown"`
}

func runServerScenario(t *testing.T, dir, endpoint, tokenURL string) tsServerRun {
	t.Helper()
	var run tsServerRun
	out := node(t, dir, "client.mjs", "server", endpoint, tokenURL)
	if err := json.Unmarshal(out, &run); err != nil {
		t.Fatalf("client.mjs printed %s: %v", out, err)
	}
	// The client speaks the newest version it knows, and the stateless
	// endpoint gives it no session.
	if run.ProtocolVersion == "" || run.ProtocolVersion != run.LatestProtocolVersion || run.SessionID != "" {
		t.Errorf("the TypeScript client speaks %q (its newest: %q), session %q", run.ProtocolVersion, run.LatestProtocolVersion, run.SessionID)
	}
	return run
}

// TestMCPInteropServer drives the bank's /mcp (directory mode) with the
// TypeScript SDK client, which signs a fresh agent JWT per request.
func TestMCPInteropServer(t *testing.T) {
	dir := interopDir(t)
	f := newFixture(t)
	p := startBank(t, buildBank(t), f.file)
	endpoint := p.url + "/mcp"
	alice := f.agents["agt_alice"]
	run := runServerScenario(t, dir, endpoint, tokenServer(t, func() (string, error) { return alice.Token(agentauthtest.Token{Audience: endpoint}), nil }))

	if run.Server != "bank" {
		t.Errorf("server name %q", run.Server)
	}
	var names []string
	for _, tl := range run.Tools {
		names = append(names, tl.Name)
		if !tl.OutputSchema || tl.Title == "" {
			t.Errorf("%s: output schema %v, title %q", tl.Name, tl.OutputSchema, tl.Title)
		}
	}
	if !slices.Equal(names, []string{"check_balance", "exchange_rate", "list_accounts", "statement_export", "transfer_money"}) {
		t.Errorf("tools %v", names)
	}
	want := []struct {
		isError bool
		prefix  string
	}{
		{false, `{"account_id":"acc_123","balance":5000,"currency":"USD"}`},
		{true, `{"error":"account_not_found"`},
		{true, `{"error":"constraint_violated"`},
		{false, `[{"account_id":"acc_123"`},
	}
	for i, w := range want {
		c := run.Calls[i]
		if c.IsError != w.isError || !strings.HasPrefix(c.Text, w.prefix) {
			t.Errorf("%s #%d: isError %v, %s", c.Name, i, c.IsError, c.Text)
		}
	}
	// The SDK validated the structured content against the output schema;
	// a list arrives wrapped.
	if run.Calls[0].StructuredContent["balance"] != float64(5000) || run.Calls[3].StructuredContent["result"] == nil {
		t.Errorf("structured content %v, %v", run.Calls[0].StructuredContent, run.Calls[3].StructuredContent)
	}
	if run.Unknown == nil || run.Unknown.Code != -32602 {
		t.Errorf("unknown tool: %+v", run.Unknown)
	}
}

// TestMCPInteropInspector runs the MCP Inspector CLI against mcpx
// serving the issue tracker's capabilities to bearer tokens.
func TestMCPInteropInspector(t *testing.T) {
	dir := interopDir(t)
	exec, err := issues.NewExecutor(issues.NewStore())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	s, err := mcpx.New(exec, mcpx.Config{
		Name:     "issues",
		Verifier: issues.Verifier{},
		Resource: base + "/mcp",
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Handle(mux, "/mcp")
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	srv.Start()
	t.Cleanup(srv.Close)

	cli := filepath.Join("node_modules", "@modelcontextprotocol", "inspector-cli", "build", "cli.js")
	inspect := func(args ...string) map[string]any {
		t.Helper()
		all := append([]string{cli, "--cli", base + "/mcp", "--transport", "http", "--header", "Authorization: Bearer alice-token"}, args...)
		out := node(t, dir, all...)
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("inspector printed %s: %v", out, err)
		}
		return v
	}
	listed := inspect("--method", "tools/list")
	var names []string
	for _, tl := range listed["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	if !slices.Equal(names, []string{"create_issue", "list_issues", "watch_issues"}) {
		t.Errorf("inspector tools/list: %v", listed)
	}
	called := inspect("--method", "tools/call", "--tool-name", "create_issue",
		"--tool-arg", "workspace_id=acme", "--tool-arg", "title=Login page is slow")
	sc, _ := called["structuredContent"].(map[string]any)
	if called["isError"] == true || sc["id"] != "ISS-1" || sc["author"] != "alice" {
		t.Errorf("inspector tools/call: %v", called)
	}
	refused := inspect("--method", "tools/call", "--tool-name", "create_issue",
		"--tool-arg", "workspace_id=globex", "--tool-arg", "title=Not mine")
	content, _ := refused["content"].([]any)
	if refused["isError"] != true || len(content) != 1 || !strings.Contains(content[0].(map[string]any)["text"].(string), `"error":`) {
		t.Errorf("inspector refused call: %v", refused)
	}
}

// TestMCPInteropAgentcap drives `agentcap mcp` with the TypeScript SDK
// client over stdio against the bank as its own provider: the model
// connects with the lifecycle tool, Alice approves on the bank's page,
// the bank's tools appear and run. Then the TypeScript client calls the
// bank's /mcp as that agent, with tokens from `agentcap sign`.
func TestMCPInteropAgentcap(t *testing.T) {
	dir := interopDir(t)
	p := startProviderBank(t, buildBank(t), filepath.Join(t.TempDir(), "bank.db"))
	agentcapBin := buildCommand(t, "../../cmd/agentcap", "agentcap")
	state := t.TempDir()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs", "agentcap", agentcapBin, state, p.url)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	next := func(v any) {
		t.Helper()
		if !lines.Scan() {
			_ = cmd.Wait()
			t.Fatalf("client.mjs ended early:\n%s", stderr.String())
		}
		if err := json.Unmarshal(lines.Bytes(), v); err != nil {
			t.Fatalf("client.mjs printed %s: %v", lines.Bytes(), err)
		}
	}
	var first struct {
		Before  []string `json:"before"`
		Connect tsCall   `json:"connect"`
	}
	next(&first)
	if len(first.Before) != 6 || first.Connect.IsError {
		t.Fatalf("before connecting: %v, %+v", first.Before, first.Connect)
	}
	ap, _ := first.Connect.StructuredContent["approval"].(map[string]any)
	code, _ := ap["user_code"].(string)
	if first.Connect.StructuredContent["status"] != "pending" || code == "" || !strings.Contains(first.Connect.Text, code) {
		t.Fatalf("connect: %+v", first.Connect)
	}
	if err := approve(p.url, "user_alice", code, "check_balance"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, "approved\n"); err != nil {
		t.Fatal(err)
	}
	var done struct {
		After []string `json:"after"`
		Calls []tsCall `json:"calls"`
	}
	next(&done)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("client.mjs: %v\n%s", err, stderr.String())
	}
	if !slices.Contains(done.After, "bank__check_balance") || len(done.Calls) != 2 {
		t.Fatalf("after approval: %v, %+v\n%s", done.After, done.Calls, stderr.String())
	}
	if c := done.Calls[0]; c.IsError || c.Text != `{"account_id":"acc_123","balance":5000,"currency":"USD"}` || c.StructuredContent["balance"] != float64(5000) {
		t.Errorf("bank__check_balance: %+v", c)
	}
	if c := done.Calls[1]; !c.IsError || !strings.Contains(c.Text, `"error":"account_not_found"`) {
		t.Errorf("bank__check_balance of another's account: %+v", c)
	}

	// The same agent on the bank's /mcp, with a fresh token from
	// `agentcap sign` for every request.
	endpoint := p.url + "/mcp"
	sign := func() (string, error) {
		out, err := exec.Command(agentcapBin, "sign", "--aud", endpoint, "--state", state, "--insecure-loopback").Output()
		return strings.TrimSpace(string(out)), err
	}
	run := runServerScenario(t, dir, endpoint, tokenServer(t, sign))
	if c := run.Calls[0]; c.IsError || !strings.HasPrefix(c.Text, `{"account_id":"acc_123","balance":`) {
		t.Errorf("check_balance over /mcp: %+v", c)
	}
	if c := run.Calls[2]; !c.IsError || !strings.Contains(c.Text, `"error":"capability_not_granted"`) {
		t.Errorf("transfer_money over /mcp: %+v", c)
	}
}
