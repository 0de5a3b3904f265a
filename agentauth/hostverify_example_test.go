package agentauth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// ExampleNewHostVerifier lets hosts list capabilities with their host
// JWT (protocol §5.2) at a location trusting a directory: a host linked
// to a user sees that user's capabilities before it has any agent.
func ExampleNewHostVerifier() {
	const issuer = "https://app.example"
	linked := agentauthtest.NewHost("hst_1", agentauthtest.WithUser("user_1"), agentauthtest.WithClock(exampleNow))
	stranger := agentauthtest.NewHost("hst_2", agentauthtest.WithClock(exampleNow))
	dir, _ := agentauthtest.NewDirectory([]*agentauthtest.Host{linked, stranger}, nil)
	agents, _ := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: dir, Audiences: []string{issuer + "/capability/execute"}, Now: exampleNow})
	hosts, _ := agentauth.NewHostVerifier(agentauth.HostVerifierConfig{Directory: dir, Audiences: []string{issuer}, Now: exampleNow})

	forUsers := core.VisibleTo(func(_ context.Context, c agentauth.Caller[string]) bool { return c.Principal != "" })
	inbox := core.MustDefine("inbox", "Read the user's inbox.",
		func(context.Context, struct{}, core.NoInput) (greetOut, error) { return greetOut{}, nil }, forUsers)
	exec := core.MustExecutor(core.MustRegistry(inbox), core.ExecutorConfig[struct{}, agentauth.Caller[string]]{
		CreateContext: func(context.Context, agentauth.Caller[string], *core.Definition, any) (struct{}, error) {
			return struct{}{}, nil
		},
	})
	cfg, _ := agentauth.HTTPConfig(agentauth.HTTPOptions[string]{
		Sessions:      agents,
		Principal:     func(_ context.Context, s *agentauth.Session) (string, error) { return s.Agent.UserID, nil },
		Hosts:         hosts,
		HostPrincipal: func(_ context.Context, h *agentauth.Host) (string, error) { return h.UserID, nil },
		Issuer:        issuer,
	})
	h, _ := httpx.New(exec, cfg)

	for _, host := range []*agentauthtest.Host{linked, stranger} {
		req := httptest.NewRequest(http.MethodGet, "/capability/list", nil)
		req.Header.Set("Authorization", "Bearer "+host.Token(issuer))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Print(host.ID, " ", rec.Code, " ", rec.Body)
	}
	// Output:
	// hst_1 200 {"capabilities":[{"name":"inbox","description":"Read the user's inbox.","approval_strength":"none","risk":"low","supports_preview":false,"requires_confirmation":false}],"has_more":false,"next_cursor":null}
	// hst_2 200 {"capabilities":[],"has_more":false,"next_cursor":null}
}
