package mcpx_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/mcpx"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// agentFixture is an MCP endpoint for Agent Auth agents on one router.
type agentFixture struct {
	base, resource string
	a, b           *agentauthtest.Agent
}

// whileExecuting shows a capability to nobody in listings, yet lets an
// agent that calls it get a precise refusal, as httpx's execute does.
var whileExecuting = core.WithVisibility(func(_ context.Context, _ *auth.Identity, executing bool) bool { return executing })

func newAgentFixture(t testing.TB, r router) *agentFixture {
	t.Helper()
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", UserID: "alice"})
	a := host.NewAgent(agentauthtest.Agent{ID: "agt_a"}).Grant("echo", nil).Grant("transfer", map[string]any{"amount": map[string]any{"max": 50}}).Grant("slow", nil)
	b := host.NewAgent(agentauthtest.Agent{ID: "agt_b"}).Grant("echo", nil)
	dir, err := agentauthtest.NewDirectory([]*agentauthtest.Host{host}, []*agentauthtest.Agent{a, b})
	if err != nil {
		t.Fatal(err)
	}
	ln, base := listen(t)
	f := &agentFixture{base: base, resource: base + "/mcp", a: a, b: b}
	sessions, err := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: dir, Audiences: []string{f.resource}})
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := agentauth.New(agentauth.Config{Sessions: sessions, Issuer: base})
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcpx.New(newExecutor(t, newProbe(), whileExecuting), mcpx.Config{Verifier: verifier, Resource: f.resource})
	if err != nil {
		t.Fatal(err)
	}
	r.serve(t, ln, s)
	return f
}

// TestAgentAuth drives the server with Agent Auth agents that sign a
// fresh agent JWT for every HTTP request, on each router.
func TestAgentAuth(t *testing.T) {
	for _, r := range routers {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			f := newAgentFixture(t, r)
			signA := func() string { return f.a.Token(agentauthtest.Token{Audience: f.resource}) }
			cs := connect(t, f.resource, signA, nil)

			res, err := cs.ListTools(timeout(t), &mcp.ListToolsParams{})
			if err != nil {
				t.Fatal(err)
			}
			status := map[string]any{}
			for _, tl := range res.Tools {
				status[tl.Name] = tl.Meta[mcpx.MetaGrantStatus]
			}
			want := map[string]any{"echo": "granted", "list_items": "not_granted", "slow": "granted", "transfer": "granted"}
			if diff := cmp.Diff(want, status); diff != "" {
				t.Errorf("tools and grant status (-want +got):\n%s", diff)
			}

			calls := []struct {
				name, tool string
				args       any
				isError    bool
				prefix     string
			}{
				{"granted", "echo", map[string]any{"message": "hi"}, false, `{"message":"hi","by":"alice"}`},
				{"within the constraints", "transfer", map[string]any{"amount": 20}, false, `{"status":"completed"}`},
				{"outside the constraints", "transfer", map[string]any{"amount": 80}, true, `{"error":"constraint_violated"`},
				{"not granted", "list_items", nil, true, `{"error":"capability_not_granted"`},
				// Unlisted, yet visible while executing: a precise refusal.
				{"visible while executing", "secret", nil, true, `{"error":"capability_not_granted"`},
			}
			for _, c := range calls {
				res, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if got := text(t, res); res.IsError != c.isError || !strings.HasPrefix(got, c.prefix) {
					t.Errorf("%s: isError %v, text %s; want %v, %s", c.name, res.IsError, got, c.isError, c.prefix)
				}
			}

			used := signA()
			resp := post(t, f.resource, "Bearer "+used, "", initialize)
			resp.Body.Close()
			metadata := f.base + "/.well-known/oauth-protected-resource/mcp"
			// The verifier's own challenge follows the Bearer one.
			agentAuth := `AgentAuth discovery="` + f.base + `/.well-known/agent-configuration"`
			missing := []string{`Bearer resource_metadata="` + metadata + `"`, agentAuth}
			invalid := []string{`Bearer error="invalid_token", resource_metadata="` + metadata + `"`, agentAuth}
			failures := []struct {
				name, auth, code string
				challenges       []string
			}{
				{"no token", "", "authentication_required", missing},
				{"another scheme", "AgentAuth " + signA(), "authentication_required", missing},
				{"replayed", "Bearer " + used, "invalid_jwt", invalid},
				{"expired", "Bearer " + f.a.Token(agentauthtest.Token{Audience: f.resource, IssuedAt: time.Now().Add(-2 * time.Minute), Lifetime: time.Minute}), "invalid_jwt", invalid},
				{"wrong audience", "Bearer " + f.a.Token(agentauthtest.Token{Audience: f.base + "/capability/execute"}), "invalid_jwt", invalid},
				{"host token", "Bearer " + f.a.Host.Token(agentauthtest.Token{Audience: f.resource}), "invalid_jwt", invalid},
				{"two tokens", "Bearer " + signA() + " " + signA(), "invalid_jwt", invalid},
			}
			for _, fl := range failures {
				resp := post(t, f.resource, fl.auth, "", initialize)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var env struct{ Error string }
				_ = json.Unmarshal(body, &env)
				got := resp.Header.Values("WWW-Authenticate")
				if resp.StatusCode != http.StatusUnauthorized || env.Error != fl.code {
					t.Errorf("%s: %d %s", fl.name, resp.StatusCode, body)
				}
				if !slices.Equal(got, fl.challenges) {
					t.Errorf("%s: challenges %q, want %q", fl.name, got, fl.challenges)
				}
			}
		})
	}
}
