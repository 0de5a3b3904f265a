package echox_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/echox"
	"github.com/agentcap/agentcap/httpx"
)

// ExampleMount serves capabilities under /agent on an existing Echo app.
// The group's middleware sets a value with c.Set; the context resolver
// reads it from the context it is given.
func ExampleMount() {
	type tenant struct{ Name string }
	type out struct {
		Tenant string `json:"tenant"`
	}
	whoami := core.MustDefine("tenant.current", "Name the current tenant",
		func(_ context.Context, t tenant, _ core.NoInput) (out, error) { return out{Tenant: t.Name}, nil })
	exec := core.MustExecutor(core.MustRegistry(whoami),
		func(ctx context.Context, _ *auth.Identity, _ *core.Definition, _ any) (tenant, error) {
			name, _ := ctx.Value("tenant").(string)
			return tenant{Name: name}, nil
		}, core.Config{})
	h, err := httpx.New(exec, httpx.Config{
		Verifier: auth.VerifierFunc(func(context.Context, *auth.Request) (*auth.Identity, error) {
			return &auth.Identity{Subject: "agent"}, nil
		}),
	})
	if err != nil {
		panic(err)
	}

	e := echo.New()
	agent := e.Group("/agent", func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Set("tenant", "acme")
			return next(c)
		}
	})
	echox.Mount(agent, h)

	req := httptest.NewRequest("POST", "/agent/capability/execute", strings.NewReader(`{"capability":"tenant.current"}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	fmt.Print(rec.Code, " ", rec.Body.String())
	// Output: 200 {"data":{"tenant":"acme"}}
}
