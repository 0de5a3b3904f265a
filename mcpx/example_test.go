package mcpx_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/auth/oidcauth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/mcpx"
)

type greeting struct {
	Text string `json:"text"`
}

type greetIn struct {
	Name string `json:"name"`
}

// greeter is an executor of one capability, whose context is the user
// the caller acts for.
func greeter() *core.Executor {
	greet := core.MustDefine("greet", "Greet someone by name.",
		func(_ context.Context, user string, in greetIn) (greeting, error) {
			return greeting{Text: "Hello " + in.Name + ", from " + user}, nil
		}, core.WithReadOnly())
	return core.MustExecutor(core.MustRegistry(greet),
		func(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (string, error) {
			if id == nil {
				return "", errors.New("greet needs a caller")
			}
			return id.UserID, nil
		}, core.Config{})
}

// Example serves one capability to MCP clients that bring OAuth bearer
// tokens issued for the endpoint, at /mcp with its protected resource
// metadata. The verifier turns each request's token into the caller's
// identity, whose Subject owns the MCP session.
func Example() {
	const resource = "https://app.example/mcp"
	// In a real server the token verifier comes from oidc.NewProvider(ctx,
	// issuer).Verifier; its ClientID is the endpoint's URL, so that tokens
	// made for another resource are refused.
	keys := &oidc.StaticKeySet{}
	tokens := oidc.NewVerifier("https://login.example", keys, &oidc.Config{ClientID: resource})
	verifier := oidcauth.New(tokens, func(_ context.Context, tok *oidc.IDToken) (*auth.Identity, error) {
		return &auth.Identity{Subject: tok.Subject, UserID: tok.Subject, Claims: tok}, nil
	})

	s, err := mcpx.New(greeter(), mcpx.Config{
		Name:                 "app",
		Verifier:             verifier,
		Resource:             resource,
		AuthorizationServers: []string{"https://login.example"},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Handle(mux, "/mcp")
	fmt.Println(s.MetadataURL())
	// Output: https://app.example/.well-known/oauth-protected-resource/mcp
}

// ExampleServer_Run serves the capabilities over standard input and
// output, to the MCP client that started the process. No credentials
// travel over stdio: the process decides who the caller is, here the
// user it runs for.
func ExampleServer_Run() {
	s, err := mcpx.New(greeter(), mcpx.Config{Name: "app"})
	if err != nil {
		log.Fatal(err)
	}
	user := os.Getenv("USER")
	if err := s.Run(context.Background(), &mcp.StdioTransport{}, &auth.Identity{Subject: user, UserID: user}); err != nil {
		log.Fatal(err)
	}
}
