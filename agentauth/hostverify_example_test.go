package agentauth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// ExampleNewHostVerifier lets hosts list capabilities with their host
// JWT (protocol §5.2) at a location trusting a directory: a host linked
// to a user sees that user's capabilities before it has any agent.
func ExampleNewHostVerifier() {
	const issuer = "https://app.example"
	linked := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", UserID: "user_1", Clock: exampleNow})
	stranger := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_2", Clock: exampleNow})
	dir, _ := agentauthtest.NewDirectory([]*agentauthtest.Host{linked, stranger}, nil)
	agents, _ := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: dir, Audiences: []string{issuer + "/capability/execute"}, Now: exampleNow})
	hosts, _ := agentauth.NewHostVerifier(agentauth.HostVerifierConfig{Directory: dir, Audiences: []string{issuer}, Now: exampleNow})

	// The identity of a host caller names its linked user, if any.
	forUsers := core.WithVisibility(func(_ context.Context, id *auth.Identity, _ bool) bool { return id != nil && id.UserID != "" })
	inbox := core.MustDefine("inbox", "Read the user's inbox.",
		func(context.Context, struct{}, core.NoInput) (greetOut, error) { return greetOut{}, nil }, forUsers)
	exec := core.MustExecutor(core.MustRegistry(inbox),
		func(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) { return struct{}{}, nil },
		core.Config{})
	verifier, _ := agentauth.New(agentauth.Config{
		Sessions: agents,
		Hosts:    hosts,
		Issuer:   issuer,
	})
	h, _ := httpx.New(exec, httpx.Config{Verifier: verifier})

	for _, host := range []*agentauthtest.Host{linked, stranger} {
		req := httptest.NewRequest(http.MethodGet, "/capability/list", nil)
		req.Header.Set("Authorization", "Bearer "+host.Token(agentauthtest.Token{Audience: issuer}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Print(host.ID, " ", rec.Code, " ", rec.Body)
	}
	// Output:
	// hst_1 200 {"capabilities":[{"name":"inbox","description":"Read the user's inbox.","approval_strength":"none","risk":"low","supports_preview":false,"requires_confirmation":false}],"has_more":false,"next_cursor":null}
	// hst_2 200 {"capabilities":[],"has_more":false,"next_cursor":null}
}
