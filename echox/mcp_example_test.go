package echox_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/echox"
	"github.com/agentcap/agentcap/mcpx"
)

// ExampleMountMCP serves capabilities to MCP clients at /mcp, and the
// endpoint's protected resource metadata at the origin's root.
func ExampleMountMCP() {
	type out struct {
		Text string `json:"text"`
	}
	hello := core.MustDefine("hello", "Say hello.",
		func(_ context.Context, user string, _ core.NoInput) (out, error) {
			return out{Text: "hello " + user}, nil
		})
	exec := core.MustExecutor(core.MustRegistry(hello),
		func(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (string, error) {
			return id.UserID, nil
		},
		core.Config{})
	s, err := mcpx.New(exec, mcpx.Config{
		// One token, for the user demo, who owns the sessions it opens.
		Verifier: auth.VerifierFunc(func(_ context.Context, req *auth.Request) (*auth.Identity, error) {
			if req.Authorization != "Bearer demo-token" {
				return nil, auth.ErrNoCredentials
			}
			return &auth.Identity{Subject: "demo", UserID: "demo"}, nil
		}),
		Resource: "https://app.example/mcp",
	})
	if err != nil {
		log.Fatal(err)
	}
	r := echo.New()
	echox.MountMCP(r, "/mcp", s)

	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-protected-resource/mcp", nil))
	fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	// Output: 200 {"resource":"https://app.example/mcp","bearer_methods_supported":["header"]}
}
