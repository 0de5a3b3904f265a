package provider_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/ratelimit"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// The helpers of this file start with "adm", so that they cannot collide
// with those of the package's other tests.

type admClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *admClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *admClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestAgentLimitBeforeReplayCache: the provider counts an agent JWT
// against the agent's rate limit before it records the token's jti, so
// that requests refused 429 take no room in the replay cache every agent
// relies on, and a refused token stays good for a retry.
func TestAgentLimitBeforeReplayCache(t *testing.T) {
	ctx := context.Background()
	clock := &admClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	const issuer = "https://provider.example"
	ping := core.MustDefine("ping", "Ping.", func(context.Context, struct{}, struct{}) (struct{}, error) { return struct{}{}, nil })
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", UserID: "usr_1", Clock: clock.Now})
	agent := host.NewAgent(agentauthtest.Agent{ID: "agt_1"}).Grant("ping", nil)
	st := store.NewMemory(nil)
	if err := st.CreateHost(ctx, &store.Host{ID: host.ID, PublicKey: host.PublicJWK(), UserID: "usr_1", Status: agentcap.StatusActive}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateAgent(ctx, &store.Agent{ID: agent.ID, HostID: host.ID, UserID: "usr_1", Mode: agentcap.ModeDelegated,
		Status: agentcap.StatusActive, AgentKey: store.AgentKey{PublicKey: agent.PublicJWK()},
		Grants: []store.Grant{{Capability: "ping", Status: agentcap.StatusActive}}}); err != nil {
		t.Fatal(err)
	}
	cache := agentauth.NewMemoryReplayCache(0).WithClock(clock.Now)
	prov, err := provider.New(provider.Config{
		Issuer: issuer, ProviderName: "test", Store: st, Registry: core.MustRegistry(ping),
		Replay: cache, Now: clock.Now,
		RateLimits: provider.RateLimits{PerAgent: ratelimit.Limit{N: 2, Window: time.Minute}},
	})
	if err != nil {
		t.Fatal(err)
	}
	verify := func(token string) error {
		_, err := prov.Verify(ctx, &auth.Request{Authorization: "Bearer " + token})
		return err
	}
	token := func(i int) string {
		return agent.Token(agentauthtest.Token{Audience: prov.DefaultLocation(), JTI: fmt.Sprintf("jti-%d", i)})
	}
	for i := range 2 {
		if err := verify(token(i)); err != nil {
			t.Fatalf("token %d: %v", i, err)
		}
	}
	for i := 2; i < 10; i++ {
		if err := verify(token(i)); agentcap.CodeOf(err) != agentcap.CodeRateLimited {
			t.Fatalf("token %d beyond the limit: %v; want rate_limited", i, err)
		}
	}
	if n := cache.Len(); n != 2 {
		t.Fatalf("the replay cache holds %d token ids after 2 accepted and 8 refused tokens; want 2", n)
	}
	// A refused token was not spent: it is good once the limit allows.
	clock.Add(30 * time.Second)
	if err := verify(token(5)); err != nil {
		t.Fatalf("a refused token, once the limit allows: %v", err)
	}
}
