package mcpx_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap/mcpx"
)

// stdioEnv makes the test binary an MCP server on standard input and
// output, acting for the user it names, instead of running the tests.
const stdioEnv = "MCPX_TEST_STDIO_USER"

func TestMain(m *testing.M) {
	if name := os.Getenv(stdioEnv); name != "" {
		os.Exit(serveStdio(name))
	}
	os.Exit(m.Run())
}

func serveStdio(name string) int {
	s, err := mcpx.New(newExecutor(tbStub{}, newProbe(), adminOnly), mcpx.Config{Name: "fixture", PageSize: 2})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}, person(name)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// tbStub lets the fixture's constructors run outside a test; they only
// call Helper and, on a broken fixture, Fatal.
type tbStub struct{ testing.TB }

func (tbStub) Helper()           {}
func (tbStub) Fatal(args ...any) { panic(fmt.Sprint(args...)) }

// TestStdio drives the server over stdio: the go-sdk client starts this
// test binary as the server process.
func TestStdio(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), stdioEnv+"=alice")
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1.0.0"}, nil)
	cs, err := c.Connect(timeout(t), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	if diff := cmp.Diff([]string{"echo", "list_items", "slow", "transfer"}, names(listAll(t, cs))); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	res, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || text(t, res) != `{"message":"hi","by":"alice"}` {
		t.Errorf("echo: %v %q", res.IsError, text(t, res))
	}
	res, err = cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": 500}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.HasPrefix(text(t, res), `{"error":"insufficient_funds"`) {
		t.Errorf("transfer: %v %q", res.IsError, text(t, res))
	}
	if _, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "secret"}); !isProtocolError(err, jsonrpc.CodeInvalidParams) {
		t.Errorf("hidden tool: %v", err)
	}
}
