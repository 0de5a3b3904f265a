package fiberx_test

import (
	"context"
	"log"

	"github.com/gofiber/fiber/v2"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/fiberx"
	"github.com/agentcap/agentcap/httpx"
)

// ExampleMount serves capabilities under /agent on an existing Fiber app,
// behind the group's own middleware.
func ExampleMount() {
	ping := core.MustDefine("ping", "Answer pong",
		func(context.Context, struct{}, core.NoInput) (struct {
			Pong bool `json:"pong"`
		}, error) {
			return struct {
				Pong bool `json:"pong"`
			}{true}, nil
		})
	exec := core.MustExecutor(core.MustRegistry(ping),
		func(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) { return struct{}{}, nil },
		core.Config{})
	h, err := httpx.New(exec, httpx.Config{
		Verifier: auth.VerifierFunc(func(_ context.Context, req *auth.Request) (*auth.Identity, error) {
			if req.Authorization == "" {
				return nil, auth.ErrNoCredentials
			}
			return &auth.Identity{Subject: "agent"}, nil
		}),
	})
	if err != nil {
		log.Fatal(err)
	}
	app := fiber.New()
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok") })
	fiberx.Mount(app.Group("/agent"), h)
}
