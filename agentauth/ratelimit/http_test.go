package ratelimit_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentcap/agentcap/agentauth/ratelimit"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

type in struct{}
type out struct{}

// TestErrorThroughHTTPX: a verifier that refuses with Error gets the
// protocol's 429 answer, header and body, from httpx.
func TestErrorThroughHTTPX(t *testing.T) {
	reg, err := core.NewRegistry(core.MustDefine("noop", "does nothing", func(context.Context, struct{}, in) (out, error) { return out{}, nil }))
	if err != nil {
		t.Fatal(err)
	}
	exec, err := core.NewExecutor(reg, func(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) { return struct{}{}, nil }, core.Config{})
	if err != nil {
		t.Fatal(err)
	}
	limiter := ratelimit.NewMemory(0)
	h, err := httpx.New(exec, httpx.Config{
		Verifier: auth.VerifierFunc(func(ctx context.Context, _ *auth.Request) (*auth.Identity, error) {
			d, err := limiter.Allow(ctx, ratelimit.Key(ratelimit.DimAgent, "agt_1"), ratelimit.Limit{N: 1, Window: 42 * time.Second})
			if err != nil {
				return nil, err
			}
			if !d.Allowed {
				return nil, ratelimit.Error(d, "")
			}
			return &auth.Identity{Subject: "agt_1", AgentID: "agt_1"}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	call := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/capability/list", nil)
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := call(); rec.Code != http.StatusOK {
		t.Fatalf("first call: %d %s", rec.Code, rec.Body)
	}
	rec := call()
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "42" ||
		body["error"] != "rate_limited" || body["retry_after"] != float64(42) {
		t.Errorf("refused call: %d, Retry-After %q, body %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
}
