package fiberx_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/fiberx"
	"github.com/agentcap/agentcap/httpx"
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
	exec := core.MustExecutor(core.MustRegistry(hello), core.ExecutorConfig[string, string]{
		CreateContext: func(_ context.Context, user string, _ *core.Definition, _ any) (string, error) { return user, nil },
	})
	s, err := mcpx.New(exec, mcpx.Config[string]{
		Authenticate: func(_ context.Context, req *httpx.Request) (string, error) {
			if req.Header("Authorization") != "Bearer demo-token" {
				return "", httpx.ErrNoCredentials
			}
			return "demo", nil
		},
		SessionOwner: func(user string) string { return user },
		Resource:     "https://app.example/mcp",
	})
	if err != nil {
		log.Fatal(err)
	}
	r := fiber.New()
	fiberx.MountMCP(r, "/mcp", s)

	resp, err := r.Test(httptest.NewRequest(http.MethodGet, "/.well-known/oauth-protected-resource/mcp", nil))
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.TrimSpace(string(body)))
	// Output: 200 {"resource":"https://app.example/mcp","bearer_methods_supported":["header"]}
}
