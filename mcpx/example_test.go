package mcpx_test

import (
	"context"
	"fmt"
	"log"
	"net/http"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx/oidcauth"
	"github.com/agentcap/agentcap/mcpx"
)

type greeting struct {
	Text string `json:"text"`
}

type greetIn struct {
	Name string `json:"name"`
}

// Example serves one capability to MCP clients that bring OAuth bearer
// tokens issued for the endpoint, at /mcp with its protected resource
// metadata.
func Example() {
	greet := core.MustDefine("greet", "Greet someone by name.",
		func(_ context.Context, user string, in greetIn) (greeting, error) {
			return greeting{Text: "Hello " + in.Name + ", from " + user}, nil
		}, core.WithReadOnly())
	exec := core.MustExecutor(core.MustRegistry(greet), core.ExecutorConfig[string, string]{
		CreateContext: func(_ context.Context, user string, _ *core.Definition, _ any) (string, error) { return user, nil },
	})

	const resource = "https://app.example/mcp"
	// In a real server the verifier comes from oidc.NewProvider(ctx,
	// issuer).Verifier; its ClientID is the endpoint's URL, so that tokens
	// made for another resource are refused.
	keys := &oidc.StaticKeySet{}
	verifier := oidc.NewVerifier("https://login.example", keys, &oidc.Config{ClientID: resource})

	s, err := mcpx.New(exec, mcpx.Config[string]{
		Name: "app",
		Authenticate: oidcauth.New(verifier, func(_ context.Context, tok *oidc.IDToken) (string, error) {
			return tok.Subject, nil
		}),
		SessionOwner:         func(user string) string { return user },
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
