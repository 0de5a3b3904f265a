package oidcauth_test

import (
	"context"
	"log"
	"net/http"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/auth/oidcauth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

// realm makes httpx name the Bearer scheme in its 401 answers.
type realm struct{ auth.Verifier }

func (realm) Challenge() string { return `Bearer realm="agent"` }

// Example authenticates capability calls with ID tokens from an OpenID
// provider. The identify function decides which caller a verified token
// is; the executor's context function builds what the capabilities see.
func Example() {
	ctx := context.Background()
	provider, err := oidc.NewProvider(ctx, "https://accounts.example.com")
	if err != nil {
		log.Print(err)
		return
	}
	verifier := oidcauth.New(provider.Verifier(&oidc.Config{ClientID: "my-agent-api"}),
		func(_ context.Context, tok *oidc.IDToken) (*auth.Identity, error) {
			var claims struct {
				Email         string `json:"email"`
				EmailVerified bool   `json:"email_verified"`
			}
			if err := tok.Claims(&claims); err != nil {
				return nil, err
			}
			if !claims.EmailVerified {
				return nil, agentcap.NewError(agentcap.CodeUnauthorized, "the account's email address is not verified")
			}
			return &auth.Identity{Subject: tok.Subject, UserID: claims.Email, Claims: tok}, nil
		})

	type user struct{ Subject, Email string }
	whoami := core.MustDefine("whoami", "Tell the caller who it is",
		func(_ context.Context, u user, _ core.NoInput) (user, error) { return u, nil })
	exec := core.MustExecutor(core.MustRegistry(whoami),
		func(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (user, error) {
			return user{Subject: id.Subject, Email: id.UserID}, nil
		}, core.Config{})
	h, err := httpx.New(exec, httpx.Config{Verifier: realm{verifier}})
	if err != nil {
		log.Print(err)
		return
	}
	http.Handle("/agent/", http.StripPrefix("/agent", h))
}
