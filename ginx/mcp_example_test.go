package ginx_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/ginx"
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
	r := gin.New()
	ginx.MountMCP(r, "/mcp", s)

	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-protected-resource/mcp", nil))
	fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	// Output: 200 {"resource":"https://app.example/mcp","bearer_methods_supported":["header"]}
}
