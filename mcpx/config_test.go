package mcpx_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/mcpx"
)

func TestNewRefusesIncompleteHTTPConfig(t *testing.T) {
	exec := newExecutor(t, newProbe(), adminOnly)
	v := auth.VerifierFunc(func(context.Context, *auth.Request) (*auth.Identity, error) { return person("x"), nil })
	tests := []struct {
		name string
		cfg  mcpx.Config
		want string
	}{
		{"no resource", mcpx.Config{Verifier: v}, "Resource"},
		{"relative resource", mcpx.Config{Verifier: v, Resource: "/mcp"}, "Resource"},
		{"resource with a query", mcpx.Config{Verifier: v, Resource: "https://x.example/mcp?a=1"}, "Resource"},
		{"resource with a quote", mcpx.Config{Verifier: v, Resource: `https://x.example/m"cp`}, "Resource"},
		{"negative page size", mcpx.Config{PageSize: -1}, "negative"},
		{"negative body limit", mcpx.Config{MaxBodyBytes: -1}, "negative"},
		{"bad trusted origin", mcpx.Config{Verifier: v, Resource: "https://x.example/mcp", TrustedOrigins: []string{"::"}}, "TrustedOrigins"},
		{"challenge of two lines", mcpx.Config{Verifier: challenger{v, "Bearer realm=\"a\"\r\nX-Injected: 1"}, Resource: "https://x.example/mcp"}, "challenge"},
	}
	for _, tt := range tests {
		if _, err := mcpx.New(exec, tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error about %s", tt.name, err, tt.want)
		}
	}
	// A server without a verifier serves stdio only; over HTTP it refuses
	// everything.
	stdioOnly, err := mcpx.New(exec, mcpx.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	stdioOnly.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}")))
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != `{"error":"internal_error","message":"internal error"}`+"\n" ||
		stdioOnly.Metadata() != nil || stdioOnly.MetadataPaths() != nil {
		t.Errorf("HTTP without a verifier: %d %q", rec.Code, rec.Body)
	}
	if _, err := mcpx.New(nil, mcpx.Config{}); err == nil {
		t.Error("a nil executor source was accepted")
	}
	s, err := mcpx.New(exec, mcpx.Config{Verifier: v, Resource: "https://x.example/a/mcp/"})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.MetadataURL(); got != "https://x.example/.well-known/oauth-protected-resource/a/mcp" {
		t.Errorf("metadata URL %s", got)
	}
	if got := s.MetadataPaths(); len(got) != 2 || got[1] != "/.well-known/oauth-protected-resource/a/mcp" {
		t.Errorf("metadata paths %q", got)
	}
	if s.Resource() != "https://x.example/a/mcp/" {
		t.Errorf("resource %s", s.Resource())
	}
}

// inMemory connects a client to s for the caller id through the SDK's
// in-memory transports.
func inMemory(t testing.TB, s *mcpx.Server, id *auth.Identity) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, st, id) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		<-done
	})
	return cs
}

// FuzzCallTool sends arbitrary arguments to every tool: each call ends in
// a result (structured, or an error result with a code) or, for
// arguments that are not an object, in invalid params; nothing else.
func FuzzCallTool(f *testing.F) {
	for _, seed := range []string{`{"message":"hi"}`, `{"amount":5}`, `{"amount":"5"}`, `[]`, `null`, `{"message":"x","Message":"y"}`, `{"a":{"b":[1,2,{}]}}`, `"s"`, `{}`} {
		f.Add("echo", seed)
		f.Add("transfer", seed)
	}
	s, err := mcpx.New(newExecutor(f, newProbe(), adminOnly), mcpx.Config{})
	if err != nil {
		f.Fatal(err)
	}
	cs := inMemory(f, s, person("alice"))
	f.Fuzz(func(t *testing.T, tool, args string) {
		if tool == "slow" || !json.Valid([]byte(args)) {
			t.Skip()
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
		if err != nil {
			if !isProtocolError(err, jsonrpc.CodeInvalidParams) {
				t.Fatalf("%s %s: %v", tool, args, err)
			}
			return
		}
		if res.IsError {
			var env struct{ Error, Message string }
			if json.Unmarshal([]byte(text(t, res)), &env) != nil || env.Error == "" || env.Message == "" {
				t.Fatalf("%s %s: error result %q", tool, args, text(t, res))
			}
			return
		}
		if res.StructuredContent == nil {
			t.Fatalf("%s %s: a result without structured content", tool, args)
		}
	})
}
