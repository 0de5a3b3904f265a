package httpx_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

func TestRetryAfterHeader(t *testing.T) {
	wait := 1500 * time.Millisecond
	tests := []struct {
		name     string
		verifier auth.Verifier
		want     string
	}{
		{name: "from the authorizer", verifier: tokens{authz: &authorizer{authorize: func(context.Context, *auth.Call) error {
			return agentcap.NewError(agentcap.CodeRateLimited, "slow down").WithRetryAfter(wait)
		}}}, want: "2"},
		{name: "from the verifier", verifier: auth.VerifierFunc(func(context.Context, *auth.Request) (*auth.Identity, error) {
			return nil, agentcap.NewError(agentcap.CodeRateLimited, "slow down").WithRetryAfter(3 * time.Second)
		}), want: "3"},
		{name: "not set", verifier: tokens{authz: &authorizer{authorize: func(context.Context, *auth.Call) error {
			return core.ErrForbidden
		}}}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := newHandler(t, func(c *httpx.Config) { c.Verifier = tt.verifier })
			req := httptest.NewRequest("POST", "/capability/execute", strings.NewReader(`{"capability":"echo","arguments":{"text":"hi"}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer alice")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if got := rec.Header().Get("Retry-After"); got != tt.want {
				t.Fatalf("Retry-After = %q, want %q (status %d, body %s)", got, tt.want, rec.Code, rec.Body)
			}
			if tt.want != "" && (rec.Code != 429 || !strings.Contains(rec.Body.String(), `"error":"rate_limited"`)) {
				t.Errorf("answer = %d %s", rec.Code, rec.Body)
			}
		})
	}
}
