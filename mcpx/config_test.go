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

	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/mcpx"
)

func TestNewRefusesIncompleteHTTPConfig(t *testing.T) {
	exec := newExecutor(t, newProbe(), adminOnly, func(u user) string { return u.Name })
	authn := func(context.Context, *httpx.Request) (user, error) { return user{Name: "x"}, nil }
	owner := func(u user) string { return u.Name }
	tests := []struct {
		name string
		cfg  mcpx.Config[user]
		want string
	}{
		{"no session owner", mcpx.Config[user]{Authenticate: authn, Resource: "https://x.example/mcp"}, "SessionOwner"},
		{"no resource", mcpx.Config[user]{Authenticate: authn, SessionOwner: owner}, "Resource"},
		{"relative resource", mcpx.Config[user]{Authenticate: authn, SessionOwner: owner, Resource: "/mcp"}, "Resource"},
		{"resource with a query", mcpx.Config[user]{Authenticate: authn, SessionOwner: owner, Resource: "https://x.example/mcp?a=1"}, "Resource"},
		{"negative page size", mcpx.Config[user]{PageSize: -1}, "negative"},
		{"bad trusted origin", mcpx.Config[user]{Authenticate: authn, SessionOwner: owner, Resource: "https://x.example/mcp", TrustedOrigins: []string{"::"}}, "TrustedOrigins"},
	}
	for _, tt := range tests {
		if _, err := mcpx.New(exec, tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error about %s", tt.name, err, tt.want)
		}
	}
	// A server without an authenticator serves stdio only; over HTTP it
	// refuses everything.
	stdioOnly, err := mcpx.New(exec, mcpx.Config[user]{})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	stdioOnly.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}")))
	if rec.Code != http.StatusInternalServerError || stdioOnly.Metadata() != nil {
		t.Errorf("HTTP without Authenticate: %d", rec.Code)
	}
	if _, err := mcpx.New[app, user](nil, mcpx.Config[user]{}); err == nil {
		t.Error("a nil executor was accepted")
	}
	s, err := mcpx.New(exec, mcpx.Config[user]{Authenticate: authn, SessionOwner: owner, Resource: "https://x.example/a/mcp/"})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.MetadataURL(); got != "https://x.example/.well-known/oauth-protected-resource/a/mcp" {
		t.Errorf("metadata URL %s", got)
	}
	if got := s.MetadataPaths(); len(got) != 2 || got[1] != "/.well-known/oauth-protected-resource/a/mcp" {
		t.Errorf("metadata paths %q", got)
	}
}

// inMemory connects a client to s for principal through the SDK's
// in-memory transports.
func inMemory(t testing.TB, s *mcpx.Server[app, user], principal user) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, st, principal) }()
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
	exec := newExecutor(f, newProbe(), adminOnly, func(u user) string { return u.Name })
	s, err := mcpx.New(exec, mcpx.Config[user]{})
	if err != nil {
		f.Fatal(err)
	}
	cs := inMemory(f, s, user{Name: "alice"})
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
