package main

import (
	"context"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/fiberx"
	"github.com/agentcap/agentcap/httpx"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"log"
)

var greet = core.MustDefine("greet", "Greet the user the agent acts for.",
	func(_ context.Context, id *auth.Identity, _ core.NoInput) (string, error) {
		return "Hello, " + id.UserID + "!", nil
	})

func main() {
	reg := core.MustRegistry(greet)
	dev := provider.NewDevLogin(provider.User{ID: "alice", Name: "Alice"})
	prov, err := provider.New(provider.Config{Issuer: "http://127.0.0.1:38477", ProviderName: "greeter",
		Database: "greeter.db", Registry: reg, SignedInUser: dev.SignedInUser, SignInURL: "/login"})
	if err != nil {
		log.Fatal(err)
	}
	loc, err := httpx.New(core.MustExecutor(reg, core.IdentityContext, core.Config{}), httpx.Config{Verifier: prov})
	if err != nil {
		log.Fatal(err)
	}
	app := fiber.New()
	fiberx.Mount(app, loc) // the capability routes, served by Fiber itself
	app.All("/login", adaptor.HTTPHandler(dev))
	app.Use(adaptor.HTTPHandler(prov.Handler(loc)))
	log.Fatal(app.Listen("127.0.0.1:38477"))
}
