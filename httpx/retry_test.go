package httpx_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

func TestRetryAfterHeader(t *testing.T) {
	wait := 1500 * time.Millisecond
	limited := func(context.Context, *core.Invocation) error {
		return core.TooManyRequests("rate_limited", "slow down").WithRetryAfter(wait)
	}
	tests := []struct {
		name      string
		authorize func(context.Context, user, *core.Invocation) error
		auth      func(context.Context, *httpx.Request) (user, error)
		want      string
	}{
		{name: "from authorize", authorize: func(ctx context.Context, _ user, inv *core.Invocation) error { return limited(ctx, inv) }, want: "2"},
		{name: "from the authenticator", auth: func(context.Context, *httpx.Request) (user, error) {
			return user{}, core.TooManyRequests("rate_limited", "slow down").WithRetryAfter(3 * time.Second)
		}, want: "3"},
		{name: "not set", authorize: func(context.Context, user, *core.Invocation) error { return core.ErrForbidden }, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := newHandler(t, func(c *httpx.Config[user]) {
				if tt.authorize != nil {
					c.Authorize = tt.authorize
				}
				if tt.auth != nil {
					c.Authenticate = tt.auth
				}
			})
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
