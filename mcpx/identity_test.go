package mcpx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/mcpx"
)

// challenger gives a verifier a challenge of its own.
type challenger struct {
	auth.Verifier
	challenge string
}

func (c challenger) Challenge() string { return c.challenge }

// syncBuffer collects log output across goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestVerifierAnswers checks what the endpoint makes of each answer of
// its verifier, before any request reaches the protocol: an identity
// without a Subject cannot own a session (403), no identity and no error
// is no credentials (401 with both challenges), and the verifier's
// refusals are answered in its words (internal_error for one that names
// no code), a failure of its own redacted.
func TestVerifierAnswers(t *testing.T) {
	var mu sync.Mutex
	var seen []auth.Request
	verifier := auth.VerifierFunc(func(_ context.Context, req *auth.Request) (*auth.Identity, error) {
		mu.Lock()
		seen = append(seen, *req)
		mu.Unlock()
		switch req.Authorization {
		case "Bearer nobody":
			return &auth.Identity{UserID: "alice"}, nil
		case "Bearer anonymous":
			return nil, nil
		case "Bearer limited":
			return nil, agentcap.NewError(agentcap.CodeRateLimited, "slow down").WithRetryAfter(2500 * time.Millisecond)
		case "Bearer broken":
			return nil, errors.New("session store: secret detail")
		case "Bearer nocode":
			return nil, &agentcap.Error{Message: "this token may not be used here"}
		}
		return nil, auth.ErrNoCredentials
	})
	logs := &syncBuffer{}
	const resource = "http://127.0.0.1/mcp"
	s, err := mcpx.New(newExecutor(t, newProbe(), adminOnly), mcpx.Config{
		Verifier: challenger{verifier, `Bearer realm="test"`},
		Resource: resource,
		Logger:   slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	metadata := `resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp"`
	tests := []struct {
		name       string
		auth       string
		status     int
		body       string
		challenges []string
		retryAfter string
	}{
		{"identity without a subject", "Bearer nobody", 403,
			`{"error":"unauthorized","message":"the caller may not use this endpoint"}`, nil, ""},
		{"no identity and no error", "Bearer anonymous", 401,
			`{"error":"authentication_required","message":"authentication is required"}`,
			[]string{"Bearer " + metadata, `Bearer realm="test"`}, ""},
		{"no credentials", "", 401,
			`{"error":"authentication_required","message":"authentication is required"}`,
			[]string{"Bearer " + metadata, `Bearer realm="test"`}, ""},
		{"rate limited", "Bearer limited", 429, `{"error":"rate_limited","message":"slow down"}`, nil, "3"},
		{"verifier failure", "Bearer broken", 500, `{"error":"internal_error","message":"internal error"}`, nil, ""},
		// As httpx answers it (the conformance table).
		{"refusal without a code", "Bearer nocode", 500, `{"error":"internal_error","message":"this token may not be used here"}`, nil, ""},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(http.MethodPost, resource, strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Request-Id", "req-7")
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		res := rec.Result()
		if res.StatusCode != tt.status || rec.Body.String() != tt.body+"\n" {
			t.Errorf("%s: %d %q, want %d %q", tt.name, res.StatusCode, rec.Body, tt.status, tt.body)
		}
		if got := res.Header.Values("WWW-Authenticate"); !slices.Equal(got, tt.challenges) {
			t.Errorf("%s: challenges %q, want %q", tt.name, got, tt.challenges)
		}
		if got := res.Header.Get("Retry-After"); got != tt.retryAfter {
			t.Errorf("%s: Retry-After %q, want %q", tt.name, got, tt.retryAfter)
		}
		if res.Header.Get("Content-Type") != "application/json" || res.Header.Get("Mcp-Session-Id") != "" {
			t.Errorf("%s: headers %v", tt.name, res.Header)
		}
	}
	if !strings.Contains(logs.String(), "secret detail") {
		t.Errorf("the verifier's failure was not logged: %s", logs)
	}
	// The verifier is asked with the request's credentials, address and
	// headers, never as a discovery request: every MCP session acts.
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != len(tests) {
		t.Fatalf("the verifier was asked %d times for %d requests", len(seen), len(tests))
	}
	for _, r := range seen {
		if r.Discovery || r.RemoteAddr == "" || r.Header == nil || r.Header("X-Request-Id") != "req-7" {
			t.Errorf("the verifier was asked %+v", r)
		}
	}
}

// authorizer is an auth.Authorizer made of functions; without them it
// allows every call and reports no grant status.
type authorizer struct {
	authorize func(ctx context.Context, call *auth.Call) error
	grant     func(capability string) string
}

func (a *authorizer) Authorize(ctx context.Context, call *auth.Call) error {
	if a.authorize == nil {
		return nil
	}
	return a.authorize(ctx, call)
}

func (a *authorizer) GrantStatus(capability string) string {
	if a.grant == nil {
		return ""
	}
	return a.grant(capability)
}

func (a *authorizer) Recheck(context.Context) error { return nil }

// TestAuthorizer checks that the caller's Authorizer decides each
// tools/call, seeing the raw arguments and the decoded input, with its
// refusals as error results (a refusal of its own in its words, any other
// error as unauthorized, its cause hidden), and gives each listed tool's
// grant status.
func TestAuthorizer(t *testing.T) {
	var mu sync.Mutex
	var calls []auth.Call
	authz := &authorizer{
		authorize: func(_ context.Context, call *auth.Call) error {
			mu.Lock()
			calls = append(calls, *call)
			mu.Unlock()
			switch call.Capability {
			case "transfer":
				if in, ok := call.Input.(transferIn); ok && in.Amount > 50 {
					return agentcap.NewError(agentcap.CodeConstraintViolated, "the amount is over the grant's maximum").With("max", 50)
				}
			case "list_items":
				return errors.New("grants table: secret detail")
			}
			return nil
		},
		grant: func(capability string) string {
			switch capability {
			case "echo", "transfer":
				return "granted"
			case "list_items":
				return "not_granted"
			}
			return ""
		},
	}
	s, err := mcpx.New(newExecutor(t, newProbe(), adminOnly), mcpx.Config{PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	cs := inMemory(t, s, &auth.Identity{Subject: "agt_1", AgentID: "agt_1", UserID: "alice", Authorizer: authz})

	status := map[string]any{}
	for _, tl := range listAll(t, cs) {
		status[tl.Name] = tl.Meta[mcpx.MetaGrantStatus]
	}
	want := map[string]any{"echo": "granted", "list_items": "not_granted", "slow": nil, "transfer": "granted"}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("tools and grant status (-want +got):\n%s", diff)
	}

	for _, c := range []struct {
		name, tool string
		args       any
		isError    bool
		text       string
	}{
		{"allowed", "echo", map[string]any{"message": "hi"}, false, `{"message":"hi","by":"alice"}`},
		{"within the grant", "transfer", map[string]any{"amount": 20}, false, `{"status":"completed"}`},
		{"refused in its words", "transfer", map[string]any{"amount": 80}, true,
			`{"error":"constraint_violated","message":"the amount is over the grant's maximum","max":50}`},
		{"refused by a plain error", "list_items", nil, true, `{"error":"unauthorized","message":"the caller may not run this capability"}`},
	} {
		res, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := text(t, res); res.IsError != c.isError || got != c.text {
			t.Errorf("%s: isError %v, text %s; want %v, %s", c.name, res.IsError, got, c.isError, c.text)
		}
	}
	// Arguments that do not validate, unknown and hidden tools are
	// refused before the Authorizer is asked.
	if res, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": 0}}); err != nil ||
		!strings.HasPrefix(text(t, res), `{"error":"invalid_request"`) {
		t.Errorf("invalid arguments: %v %v", res, err)
	}
	for _, tool := range []string{"nope", "secret"} {
		if _, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: tool}); !isProtocolError(err, jsonrpc.CodeInvalidParams) {
			t.Errorf("%s: %v", tool, err)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	var asked []string
	for _, c := range calls {
		asked = append(asked, c.Capability)
	}
	if diff := cmp.Diff([]string{"echo", "transfer", "transfer", "list_items"}, asked); diff != "" {
		t.Fatalf("the Authorizer was asked (-want +got):\n%s", diff)
	}
	refused := calls[2]
	if raw := refused.Arguments["amount"]; string(raw) != "80" || refused.Input != (transferIn{Amount: 80}) {
		t.Errorf("the Authorizer saw arguments %s and input %#v", raw, refused.Input)
	}
	if got, _ := json.Marshal(calls[0].Input); string(got) != `{"message":"hi"}` {
		t.Errorf("the Authorizer saw echo's input %s", got)
	}
}
