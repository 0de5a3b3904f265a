package main

import (
	"context"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/labstack/echo/v4"
	"log"
)

var greet = core.MustDefine("greet", "Greet the user the agent acts for.",
	func(_ context.Context, id *auth.Identity, _ core.NoInput) (string, error) {
		return "Hello, " + id.UserID + "!", nil
	})

func main() {
	reg := core.MustRegistry(greet)
	dev := provider.NewDevLogin(provider.User{ID: "alice", Name: "Alice"})
	prov, err := provider.New(provider.Config{Issuer: "http://127.0.0.1:8080", ProviderName: "greeter",
		Database: "greeter.db", Registry: reg, SignedInUser: dev.SignedInUser, SignInURL: "/login"})
	if err != nil {
		log.Fatal(err)
	}
	loc, err := httpx.New(core.MustExecutor(reg, core.IdentityContext, core.Config{}), httpx.Config{Verifier: prov})
	if err != nil {
		log.Fatal(err)
	}
	e := echo.New()
	e.Any("/login", echo.WrapHandler(dev))
	e.Any("/*", echo.WrapHandler(prov.Handler(loc)))
	log.Fatal(e.Start("127.0.0.1:8080"))
}
