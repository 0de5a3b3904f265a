package httpx_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/httpx"
)

func TestCallbackPanicsAreRedacted(t *testing.T) {
	tests := []struct {
		name     string
		verifier auth.Verifier
		path     string
	}{
		{"verifier", auth.VerifierFunc(func(context.Context, *auth.Request) (*auth.Identity, error) {
			panic("secret in verifier")
		}), "/capability/execute"},
		{"authorizer", tokens{authz: &authorizer{authorize: func(context.Context, *auth.Call) error {
			panic("secret in authorizer")
		}}}, "/capability/execute"},
		{"grant status", tokens{authz: &authorizer{grant: func(string) string {
			panic("secret in grant status")
		}}}, "/capability/list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, logs := newHandler(t, func(c *httpx.Config) { c.Verifier = tt.verifier })
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
