package oidcauth_test

import (
	"context"
	"log"
	"net/http"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/httpx/oidcauth"
)

// Example authenticates capability calls with ID tokens from an OpenID
// provider. The principal function decides what a verified token means to
// the application.
func Example() {
	ctx := context.Background()
	provider, err := oidc.NewProvider(ctx, "https://accounts.example.com")
	if err != nil {
		log.Print(err)
		return
	}
	verifier := provider.Verifier(&oidc.Config{ClientID: "my-agent-api"})

	type user struct{ Subject, Email string }
	authenticate := oidcauth.New(verifier, func(_ context.Context, tok *oidc.IDToken) (user, error) {
		var claims struct {
			Email string `json:"email"`
		}
		if err := tok.Claims(&claims); err != nil {
			return user{}, err
		}
		return user{Subject: tok.Subject, Email: claims.Email}, nil
	})

	whoami := core.MustDefine("whoami", "Tell the caller who it is",
		func(_ context.Context, u user, _ core.NoInput) (user, error) { return u, nil })
	exec := core.MustExecutor(core.MustRegistry(whoami), core.ExecutorConfig[user, user]{
		CreateContext: func(_ context.Context, u user, _ *core.Definition, _ any) (user, error) { return u, nil },
	})
	h, err := httpx.New(exec, httpx.Config[user]{Authenticate: authenticate, Challenge: `Bearer realm="agent"`})
	if err != nil {
		log.Print(err)
		return
	}
	http.Handle("/agent/", http.StripPrefix("/agent", h))
}
