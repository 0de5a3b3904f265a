package agentauth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/agentcap/agentcap/agentauth"
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

func ExampleHTTPConfig() {
	const location = "https://app.example/capability/execute"

	// The directory the location trusts: one agent acting for user_1,
	// allowed to greet Ada or Grace.
	host := agentauthtest.NewHost("hst_1", agentauthtest.WithUser("user_1"), agentauthtest.WithClock(exampleNow))
	agent := host.NewAgent("agt_1").Grant("greet", map[string]any{"name": map[string]any{"in": []string{"Ada", "Grace"}}})
	dir, _ := agentauthtest.NewDirectory([]*agentauthtest.Host{host}, []*agentauthtest.Agent{agent})
	verifier, _ := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: dir, Audiences: []string{location}, Now: exampleNow})

	// The application: its principal is a user id.
	greet := core.MustDefine("greet", "Greet someone.",
		func(_ context.Context, user string, in greetIn) (greetOut, error) {
			return greetOut{Greeting: "Hello, " + in.Name + ", from " + user}, nil
		}, core.WithRequiredConstraints("name"))
	exec := core.MustExecutor(core.MustRegistry(greet), core.ExecutorConfig[string, agentauth.Caller[string]]{
		CreateContext: func(_ context.Context, c agentauth.Caller[string], _ *core.Definition, _ any) (string, error) {
			return c.Principal, nil
		},
	})

	cfg, err := agentauth.HTTPConfig(agentauth.HTTPOptions[string]{
		Sessions:  verifier,
		Principal: func(_ context.Context, s *agentauth.Session) (string, error) { return s.Agent.UserID, nil },
		Issuer:    "https://app.example",
		Now:       exampleNow,
	})
	if err != nil {
		panic(err)
	}
	h, err := httpx.New(exec, cfg)
	if err != nil {
		panic(err)
	}

	post(h, agent.Token(location), `{"capability":"greet","arguments":{"name":"Ada"}}`)
	post(h, agent.Token(location), `{"capability":"greet","arguments":{"name":"Mallory"}}`)
	// Output:
	// 200 {"data":{"greeting":"Hello, Ada, from user_1"}}
	// 403 {"error":"constraint_violated","message":"the arguments violate the grant's constraints","violations":[{"field":"name","constraint":{"in":["Ada","Grace"]},"actual":"Mallory"}]}
}

func ExampleCaller_Executing() {
	const location = "https://app.example/capability/execute"
	host := agentauthtest.NewHost("hst_1", agentauthtest.WithClock(exampleNow))
	robot := host.NewAgent("agt_robot", agentauthtest.WithMode(agentauth.ModeAutonomous)).Grant("inbox", nil)
	dir, _ := agentauthtest.NewDirectory([]*agentauthtest.Host{host}, []*agentauthtest.Agent{robot})
	verifier, _ := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: dir, Audiences: []string{location}, Now: exampleNow})

	hasUser := func(c agentauth.Caller[string]) bool { return c.Principal != "" }
	inbox := core.MustDefine("inbox", "Read the user's inbox.",
		func(context.Context, struct{}, core.NoInput) (greetOut, error) { return greetOut{}, nil },
		// Listed to agents with a user; visible to every agent executing
		// it, so that the authorizer below can refuse with a precise code.
		core.VisibleTo(func(_ context.Context, c agentauth.Caller[string]) bool {
			return c.Session != nil && (hasUser(c) || c.Executing())
		}))
	exec := core.MustExecutor(core.MustRegistry(inbox), core.ExecutorConfig[struct{}, agentauth.Caller[string]]{
		CreateContext: func(context.Context, agentauth.Caller[string], *core.Definition, any) (struct{}, error) {
			return struct{}{}, nil
		},
	})
	cfg, _ := agentauth.HTTPConfig(agentauth.HTTPOptions[string]{
		Sessions:  verifier,
		Principal: func(_ context.Context, s *agentauth.Session) (string, error) { return s.Agent.UserID, nil },
		Authorize: func(_ context.Context, c agentauth.Caller[string], _ *core.Invocation) error {
			if !hasUser(c) {
				return core.Forbidden(agentauth.CodeUnauthorized, "this capability acts for a user")
			}
			return nil
		},
		Issuer: "https://app.example",
		Now:    exampleNow,
	})
	h, _ := httpx.New(exec, cfg)

	req := httptest.NewRequest(http.MethodGet, "/capability/list", nil)
	req.Header.Set("Authorization", "Bearer "+robot.Token(location))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Print(rec.Code, " ", rec.Body)
	post(h, robot.Token(location), `{"capability":"inbox"}`)
	// Output:
	// 200 {"capabilities":[],"has_more":false,"next_cursor":null}
	// 403 {"error":"unauthorized","message":"this capability acts for a user"}
}

func ExampleBearerToken() {
	for _, header := range []string{"Bearer eyJh.eyJz.c2ln", "Basic dXNlcg==", "Bearer two tokens"} {
		token, err := agentauth.BearerToken(header)
		fmt.Printf("%q %v\n", token, err)
	}
	// Output:
	// "eyJh.eyJz.c2ln" <nil>
	// "" agentauth: Authorization scheme is not Bearer: httpx: no credentials
	// "" invalid_jwt: the Authorization header must be Bearer followed by an agent JWT
}

func ExampleDiscoveryHandler() {
	mux := http.NewServeMux()
	mux.Handle(agentauth.DiscoveryPath, agentauth.DiscoveryHandler(agentauth.Discovery{
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
	_, err := agentauth.NewDiscoveryEndpoint(agentauth.Discovery{ProviderName: "bank", Issuer: "bank.example"})
	fmt.Println(err)

	e, err := agentauth.NewDiscoveryEndpoint(agentauth.Discovery{ProviderName: "bank", Issuer: "https://bank.example"})
	if err != nil {
		panic(err)
	}
	// Serve answers routers that are not net/http.
	resp := e.Serve(&httpx.Request{Method: http.MethodGet, Path: agentauth.DiscoveryPath})
	fmt.Println(resp.Status, resp.Header.Get("Content-Type"))
	// Output:
	// agentauth: discovery document: issuer: "bank.example" is not an absolute http(s) URL without credentials or fragment
	// 200 application/json
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
