package agentauth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

type greetIn struct {
	Name string `json:"name"`
}

type greetOut struct {
	Greeting string `json:"greeting"`
}

// exampleNow is the fixed clock of the examples.
func exampleNow() time.Time { return time.Unix(1767268800, 0) }

// post sends one execute to h and prints the answer.
func post(h http.Handler, token, body string) {
	req := httptest.NewRequest(http.MethodPost, "/capability/execute", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Print(rec.Code, " ", rec.Body)
}

func ExampleNew() {
	const location = "https://app.example/capability/execute"

	// The directory the location trusts: one agent acting for user_1,
	// allowed to greet Ada or Grace.
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", UserID: "user_1", Clock: exampleNow})
	agent := host.NewAgent(agentauthtest.Agent{ID: "agt_1"}).Grant("greet", map[string]any{"name": map[string]any{"in": []string{"Ada", "Grace"}}})
	dir, _ := agentauthtest.NewDirectory([]*agentauthtest.Host{host}, []*agentauthtest.Agent{agent})
	sessions, _ := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: dir, Audiences: []string{location}, Now: exampleNow})

	// The application: its context is the user the agent acts for.
	greet := core.MustDefine("greet", "Greet someone.",
		func(_ context.Context, user string, in greetIn) (greetOut, error) {
			return greetOut{Greeting: "Hello, " + in.Name + ", from " + user}, nil
		}, core.WithRequiredConstraints("name"))
	exec := core.MustExecutor(core.MustRegistry(greet),
		func(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (string, error) {
			return id.UserID, nil
		}, core.Config{})

	verifier, err := agentauth.New(agentauth.Config{
		Sessions: sessions,
		Issuer:   "https://app.example",
		Now:      exampleNow,
	})
	if err != nil {
		panic(err)
	}
	h, err := httpx.New(exec, httpx.Config{Verifier: verifier})
	if err != nil {
		panic(err)
	}

	post(h, agent.Token(agentauthtest.Token{Audience: location}), `{"capability":"greet","arguments":{"name":"Ada"}}`)
	post(h, agent.Token(agentauthtest.Token{Audience: location}), `{"capability":"greet","arguments":{"name":"Mallory"}}`)
	// Output:
	// 200 {"data":{"greeting":"Hello, Ada, from user_1"}}
	// 403 {"error":"constraint_violated","message":"the arguments violate the grant's constraints","violations":[{"field":"name","constraint":{"in":["Ada","Grace"]},"actual":"Mallory"}]}
}

// ExampleConfig_authorize keeps a capability that acts for a user out of
// the listings of agents that act for nobody, yet lets them see it while
// executing, so that Config.Authorize refuses them in precise words
// rather than as an unknown capability.
func ExampleConfig_authorize() {
	const location = "https://app.example/capability/execute"
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", Clock: exampleNow})
	robot := host.NewAgent(agentauthtest.Agent{ID: "agt_robot", Mode: agentcap.ModeAutonomous}).Grant("inbox", nil)
	dir, _ := agentauthtest.NewDirectory([]*agentauthtest.Host{host}, []*agentauthtest.Agent{robot})
	sessions, _ := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: dir, Audiences: []string{location}, Now: exampleNow})

	inbox := core.MustDefine("inbox", "Read the user's inbox.",
		func(context.Context, struct{}, core.NoInput) (greetOut, error) { return greetOut{}, nil },
		// Listed to agents with a user; visible to every agent executing
		// it, so that the authorizer below can refuse with a precise code.
		core.WithVisibility(func(_ context.Context, id *auth.Identity, executing bool) bool {
			return agentauth.SessionOf(id) != nil && (id.UserID != "" || executing)
		}))
	exec := core.MustExecutor(core.MustRegistry(inbox),
		func(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) { return struct{}{}, nil },
		core.Config{})
	verifier, _ := agentauth.New(agentauth.Config{
		Sessions: sessions,
		Authorize: func(_ context.Context, id *auth.Identity, _ *auth.Call) error {
			if id.UserID == "" {
				return agentcap.NewError(agentcap.CodeUnauthorized, "this capability acts for a user")
			}
			return nil
		},
		Issuer: "https://app.example",
		Now:    exampleNow,
	})
	h, _ := httpx.New(exec, httpx.Config{Verifier: verifier})

	req := httptest.NewRequest(http.MethodGet, "/capability/list", nil)
	req.Header.Set("Authorization", "Bearer "+robot.Token(agentauthtest.Token{Audience: location}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Print(rec.Code, " ", rec.Body)
	post(h, robot.Token(agentauthtest.Token{Audience: location}), `{"capability":"inbox"}`)
	// Output:
	// 200 {"capabilities":[],"has_more":false,"next_cursor":null}
	// 403 {"error":"unauthorized","message":"this capability acts for a user"}
}

func ExampleDiscoveryHandler() {
	mux := http.NewServeMux()
	mux.Handle(agentcap.DiscoveryPath, agentauth.DiscoveryHandler(agentcap.Discovery{
		ProviderName:    "bank",
		Issuer:          "https://bank.example",
		DefaultLocation: "https://bank.example/capability/execute",
		Endpoints:       agentauth.LocationEndpoints(""),
	}))

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/agent-configuration", nil))
	fmt.Println(rec.Code, rec.Header().Get("Cache-Control"))
	fmt.Print(rec.Body)
	// Output:
	// 200 public, max-age=300
	// {"version":"1.0-draft","provider_name":"bank","issuer":"https://bank.example","default_location":"https://bank.example/capability/execute","algorithms":["Ed25519"],"modes":["delegated","autonomous"],"approval_methods":[],"endpoints":{"capabilities":"/capability/list","describe_capability":"/capability/describe","execute":"/capability/execute"}}
}

func ExampleNewDiscoveryEndpoint() {
	_, err := agentauth.NewDiscoveryEndpoint(agentcap.Discovery{ProviderName: "bank", Issuer: "bank.example"})
	fmt.Println(err)

	e, err := agentauth.NewDiscoveryEndpoint(agentcap.Discovery{ProviderName: "bank", Issuer: "https://bank.example"})
	if err != nil {
		panic(err)
	}
	// Body is the rendered document, for routers that write answers
	// themselves.
	fmt.Print(string(e.Body()))
	// Output:
	// agentauth: discovery document: issuer: "bank.example" is not an absolute http(s) URL without credentials or fragment
	// {"version":"1.0-draft","provider_name":"bank","issuer":"https://bank.example","algorithms":["Ed25519"],"modes":["delegated","autonomous"],"approval_methods":[],"endpoints":{}}
}

func ExampleLocationEndpoints() {
	e := agentauth.LocationEndpoints("/api/agent")
	fmt.Println(e.Capabilities)
	fmt.Println(e.DescribeCapability)
	fmt.Println(e.Execute)
	// Output:
	// /api/agent/capability/list
	// /api/agent/capability/describe
	// /api/agent/capability/execute
}
