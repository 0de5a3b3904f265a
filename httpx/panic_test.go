package httpx_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

func TestCallbackPanicsAreRedacted(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*httpx.Config[user])
		path   string
	}{
		{"authenticator", func(c *httpx.Config[user]) {
			c.Authenticate = func(context.Context, *httpx.Request) (user, error) { panic("secret in authenticator") }
		}, "/capability/execute"},
		{"authorizer", func(c *httpx.Config[user]) {
			c.Authorize = func(context.Context, user, *core.Invocation) error { panic("secret in authorizer") }
		}, "/capability/execute"},
		{"grant status", func(c *httpx.Config[user]) {
			c.GrantStatus = func(context.Context, user, *core.Definition) string { panic("secret in grant status") }
		}, "/capability/list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, logs := newHandler(t, tt.mutate)
			method, body := "POST", `{"capability":"echo","arguments":{"text":"hi"}}`
			if strings.HasSuffix(tt.path, "list") {
				method, body = "GET", ""
			}
			req := httptest.NewRequest(method, tt.path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer alice")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 500 || strings.Contains(rec.Body.String(), "secret") ||
				rec.Body.String() != "{\"error\":\"internal_error\",\"message\":\"internal error\"}\n" {
				t.Fatalf("answer = %d %q", rec.Code, rec.Body)
			}
			if !strings.Contains(logs.String(), "secret in") {
				t.Errorf("the panic was not logged: %s", logs.String())
			}
		})
	}
}
