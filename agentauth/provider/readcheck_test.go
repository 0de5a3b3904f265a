package provider_test

import (
	"context"
	"errors"
	"path/filepath"
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
	"github.com/agentcap/agentcap/sqlstore"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// The helpers of this file start with "rc".

// rcCount is a count of changes in memory (sqlstore.Changes).
type rcCount struct {
	mu sync.Mutex
	n  uint64
}

func (c *rcCount) Count(context.Context) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, nil
}

func (c *rcCount) Add(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return nil
}

// rcLimiter allows everything, and runs its hook once, the first time it
// is asked after the hook was set: in the middle of a session check,
// after the agent was read and before its token's id is recorded.
type rcLimiter struct {
	mu     sync.Mutex
	hook   func()
	allows int
}

func (l *rcLimiter) Allow(context.Context, string, ratelimit.Limit) (ratelimit.Decision, error) {
	l.mu.Lock()
	hook := l.hook
	l.hook = nil
	l.allows++
	l.mu.Unlock()
	if hook != nil {
		hook()
	}
	return ratelimit.Decision{Allowed: true}, nil
}

func (l *rcLimiter) set(hook func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hook = hook
}

// rcSetup is a provider on instance a of two instances of one SQLite
// file sharing a count of changes, its agent agt_1 (of host hst_1) kept
// in a's memory, and instance b, which writes behind a's back.
type rcSetup struct {
	prov    *provider.Provider
	b       store.Store
	limiter *rcLimiter
	host    *agentauthtest.Host
	agent   *agentauthtest.Agent
	verify  func(agent *agentauthtest.Agent) error
}

func rcOpen(t *testing.T) rcSetup {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	count := &rcCount{}
	var dbs [2]*sqlstore.DB
	for i := range dbs {
		db, err := sqlstore.OpenSQLite(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		db.SetChanges(count)
		dbs[i] = db
	}
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", UserID: "usr_1"})
	agent := host.NewAgent(agentauthtest.Agent{ID: "agt_1"}).Grant("ping", nil)
	b := dbs[1].Provider()
	if err := b.CreateHost(ctx, &store.Host{ID: host.ID, PublicKey: host.PublicJWK(), UserID: "usr_1", Status: agentcap.StatusActive}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := b.CreateAgent(ctx, &store.Agent{ID: agent.ID, HostID: host.ID, UserID: "usr_1", Mode: agentcap.ModeDelegated,
		Status: agentcap.StatusActive, AgentKey: store.AgentKey{PublicKey: agent.PublicJWK()}, ActivatedAt: &now,
		Grants: []store.Grant{{Capability: "ping", Status: agentcap.StatusActive}}}); err != nil {
		t.Fatal(err)
	}
	limiter := &rcLimiter{}
	ping := core.MustDefine("ping", "Ping.", func(context.Context, struct{}, struct{}) (struct{}, error) { return struct{}{}, nil })
	prov, err := provider.New(provider.Config{
		Issuer: "https://provider.example", ProviderName: "test", Store: dbs[0].Provider(), Registry: core.MustRegistry(ping),
		Replay: agentauth.NewMemoryReplayCache(0), RateLimits: provider.RateLimits{Limiter: limiter},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := rcSetup{prov: prov, b: b, limiter: limiter, host: host, agent: agent}
	s.verify = func(a *agentauthtest.Agent) error {
		_, err := prov.Verify(ctx, &auth.Request{Authorization: "Bearer " + a.Token(agentauthtest.Token{Audience: prov.DefaultLocation()})})
		return err
	}
	// The first call's touch is a's own write, after which a reads the
	// agent again; the second keeps it.
	for i := range 2 {
		if err := s.verify(agent); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	return s
}

// An agent that another instance revokes while one of its calls is being
// verified from the copy this instance keeps, before the call's token id
// is recorded, is refused: the count of changes has moved, so the call is
// verified again from the database. (A call whose agent was read from the
// database, the count first, is concurrent with such a revocation and
// may pass.)
func TestReadCheckSeesRevocationDuringVerification(t *testing.T) {
	s := rcOpen(t)
	ctx := context.Background()
	s.limiter.set(func() {
		if err := s.b.UpdateAgentStatus(ctx, "agt_1", []string{agentcap.StatusActive}, agentcap.StatusRevoked); err != nil {
			t.Error(err)
		}
	})
	var ce *agentcap.Error
	if err := s.verify(s.agent); !errors.As(err, &ce) || ce.Code != agentcap.CodeAgentRevoked {
		t.Fatalf("call during the revocation: %v; want agent_revoked", err)
	}
}

// A token refused on the copy this instance keeps is verified again when
// the count shows the copy stale: here the agent's key was rotated
// through another instance, and a token signed with the new key passes.
func TestReadCheckRetriesRefusalOnStaleCopy(t *testing.T) {
	s := rcOpen(t)
	ctx := context.Background()
	rotated := s.host.NewAgent(agentauthtest.Agent{ID: "agt_1"}).Grant("ping", nil)
	if err := s.b.RotateAgentKey(ctx, "agt_1", store.AgentKey{PublicKey: rotated.PublicJWK()}); err != nil {
		t.Fatal(err)
	}
	if err := s.verify(rotated); err != nil {
		t.Fatalf("token of the rotated key: %v", err)
	}
	var ce *agentcap.Error
	if err := s.verify(s.agent); !errors.As(err, &ce) || ce.Code != agentcap.CodeInvalidJWT {
		t.Fatalf("token of the old key: %v; want invalid_jwt", err)
	}
}

// A call verified again because another instance wrote meanwhile passes,
// and counts once against its rate limits.
func TestReadCheckRetryCountsLimitsOnce(t *testing.T) {
	s := rcOpen(t)
	ctx := context.Background()
	allows := func() int {
		s.limiter.mu.Lock()
		defer s.limiter.mu.Unlock()
		return s.limiter.allows
	}
	before := allows()
	if err := s.verify(s.agent); err != nil {
		t.Fatal(err)
	}
	once := allows() - before
	if once == 0 {
		t.Fatal("a call counted nothing against its limits")
	}
	s.limiter.set(func() {
		if err := s.b.SetAgentName(ctx, "agt_1", "renamed"); err != nil {
			t.Error(err)
		}
	})
	before = allows()
	if err := s.verify(s.agent); err != nil {
		t.Fatalf("call verified again after a rename: %v", err)
	}
	if got := allows() - before; got != once {
		t.Fatalf("the call verified again counted %d times against the limiter, a call counts %d", got, once)
	}
}
