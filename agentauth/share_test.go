package agentauth_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/ratelimit"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// The helpers of this file start with "sh".

const shAud = "https://bank.example/capability/execute"

// shWorld is a verifier over three hosts: hst_a with agents agt_a and
// agt_a2, hst_b with agt_b, hst_c with agt_c.
type shWorld struct {
	clock  *vfClock
	cache  *agentauth.MemoryReplayCache
	v      *agentauth.Verifier
	agents map[string]*agentauthtest.Agent
}

func shNewWorld(t *testing.T, entries int, configure func(*agentauth.VerifierConfig)) *shWorld {
	t.Helper()
	w := &shWorld{clock: &vfClock{t: vfNow}, agents: map[string]*agentauthtest.Agent{}}
	var hosts []*agentauthtest.Host
	var agents []*agentauthtest.Agent
	for _, h := range []struct {
		id     string
		agents []string
	}{{"hst_a", []string{"agt_a", "agt_a2"}}, {"hst_b", []string{"agt_b"}}, {"hst_c", []string{"agt_c"}}} {
		host := agentauthtest.NewHost(agentauthtest.Host{ID: h.id, UserID: "usr_" + h.id, Clock: w.clock.Now})
		hosts = append(hosts, host)
		for _, id := range h.agents {
			a := host.NewAgent(agentauthtest.Agent{ID: id}).Grant("check_balance", nil)
			agents = append(agents, a)
			w.agents[id] = a
		}
	}
	dir, err := agentauthtest.NewDirectory(hosts, agents)
	if err != nil {
		t.Fatal(err)
	}
	w.cache = agentauth.NewMemoryReplayCache(entries).WithClock(w.clock.Now)
	cfg := agentauth.VerifierConfig{Directory: dir, Audiences: []string{shAud}, Replay: w.cache, Now: w.clock.Now}
	if configure != nil {
		configure(&cfg)
	}
	if w.v, err = agentauth.NewVerifier(cfg); err != nil {
		t.Fatal(err)
	}
	return w
}

var shJTI int

// token mints a fresh token of agent at the world's time.
func (w *shWorld) token(agent string) string {
	shJTI++
	return w.agents[agent].Token(agentauthtest.Token{Audience: shAud, JTI: fmt.Sprintf("jti-%d", shJTI)})
}

func (w *shWorld) send(agent string) error {
	_, err := w.v.Session(context.Background(), w.token(agent))
	return err
}

// shRateLimited checks that err is 429 rate_limited with a Retry-After.
func shRateLimited(t *testing.T, what string, err error, message string) {
	t.Helper()
	e := agentcap.As(err)
	if e == nil || e.HTTPStatus() != 429 || e.Code != agentcap.CodeRateLimited || e.RetryAfter <= 0 || e.Message != message {
		t.Fatalf("%s: %v (%+v); want 429 rate_limited %q with a Retry-After", what, err, e, message)
	}
}

// TestVerifierReplayShares: one agent signing fresh jtis as fast as it
// can no longer fills the replay cache for everyone. It is refused 429
// once it holds its share of the cache's last quarter, and the other
// agents still get in; so are the other agents of its host once the host
// holds its own share. Without shares, the agent filled the cache and
// the next agent's valid token was refused 503.
func TestVerifierReplayShares(t *testing.T) {
	const entries = 1000 // shares bind from 750; 15 per agent, 125 per host
	w := shNewWorld(t, entries, nil)
	sent := 0
	var refusal error
	for ; sent <= entries; sent++ {
		if refusal = w.send("agt_a"); refusal != nil {
			break
		}
	}
	shRateLimited(t, fmt.Sprintf("agt_a's token %d", sent+1), refusal, "too many unexpired tokens of this agent; retry later")
	if !errors.Is(refusal, agentauth.ErrReplayShare) {
		t.Errorf("the refusal's cause is %v, not ErrReplayShare", refusal)
	}
	if sent != 750 || w.cache.Len() != 750 {
		t.Errorf("agt_a got %d tokens in (the cache holds %d) before its refusal; want 750", sent, w.cache.Len())
	}
	// Another host's agent gets its share.
	for i := range 15 {
		if err := w.send("agt_b"); err != nil {
			t.Fatalf("agt_b's token %d: %v", i+1, err)
		}
	}
	shRateLimited(t, "agt_b beyond its share", w.send("agt_b"), "too many unexpired tokens of this agent; retry later")
	// agt_a's host holds more than its share: its other agent is refused
	// too, a third host's agent is not.
	refusal = w.send("agt_a2")
	shRateLimited(t, "agt_a2", refusal, "too many unexpired tokens of this agent's host; retry later")
	if !errors.Is(refusal, agentauth.ErrReplayHostShare) || !errors.Is(refusal, agentauth.ErrReplayShare) {
		t.Errorf("agt_a2's refusal's cause is %v, not ErrReplayHostShare", refusal)
	}
	if err := w.send("agt_c"); err != nil {
		t.Fatalf("agt_c: %v", err)
	}
	// A refused token was not recorded: the cache holds what was let in.
	if w.cache.Len() != 750+15+1 {
		t.Errorf("the cache holds %d entries, want %d", w.cache.Len(), 750+15+1)
	}
	// Once agt_a's tokens expire, it is let in again.
	w.clock.Add(agentauth.DefaultMaxAge + 2*agentauth.DefaultSkew)
	if err := w.send("agt_a"); err != nil {
		t.Fatalf("agt_a after its tokens expired: %v", err)
	}
}

// TestMemoryReplayCacheSharesRefund: the charge of a token that is not
// recorded (a replay, or a full cache) is given back, so that replaying
// someone's captured token costs the owner it is charged to nothing, and
// a share counts live entries only.
func TestMemoryReplayCacheSharesRefund(t *testing.T) {
	clock := &vfClock{t: vfNow}
	c := agentauth.NewMemoryReplayCache(100).WithClock(clock.Now) // shares from 75: 1 per agent, 12 per host
	ctx := context.Background()
	for i := range 75 {
		if fresh, err := c.CheckAndSetFor(ctx, fmt.Sprintf("k%d", i), time.Minute, fmt.Sprintf("agt_%d", i), fmt.Sprintf("hst_%d", i)); !fresh || err != nil {
			t.Fatalf("key %d: %v, %v", i, fresh, err)
		}
	}
	// The shares bind now. Replays charged to agt_new leave its share
	// whole...
	for range 5 {
		if fresh, err := c.CheckAndSetFor(ctx, "k5", time.Minute, "agt_new", "hst_new"); fresh || err != nil {
			t.Fatalf("replay charged to agt_new: fresh = %v, err = %v; want replayed", fresh, err)
		}
	}
	if fresh, err := c.CheckAndSetFor(ctx, "new 1", time.Minute, "agt_new", "hst_new"); !fresh || err != nil {
		t.Fatalf("agt_new after replays: fresh = %v, err = %v; want its share whole", fresh, err)
	}
	// ...which is one entry.
	if fresh, err := c.CheckAndSetFor(ctx, "new 2", time.Minute, "agt_new", "hst_new"); fresh || !errors.Is(err, agentauth.ErrReplayShare) {
		t.Fatalf("agt_new beyond its share: fresh = %v, err = %v", fresh, err)
	}
	// A host's agents share the host's twelve.
	for i := range 11 {
		if fresh, err := c.CheckAndSetFor(ctx, fmt.Sprintf("h%d", i), time.Minute, fmt.Sprintf("agt_h%d", i), "hst_new"); !fresh || err != nil {
			t.Fatalf("hst_new's agent %d: %v, %v", i, fresh, err)
		}
	}
	if _, err := c.CheckAndSetFor(ctx, "h11", time.Minute, "agt_h11", "hst_new"); !errors.Is(err, agentauth.ErrReplayShare) {
		t.Fatalf("hst_new's thirteenth entry: %v; want ErrReplayShare", err)
	}
	// The whole cache still fails closed for everyone when it is full,
	// and gives the charge back.
	for i := 0; c.Len() < 100; i++ {
		if _, err := c.CheckAndSetFor(ctx, fmt.Sprintf("f%d", i), time.Minute, fmt.Sprintf("agt_f%d", i), ""); err != nil {
			t.Fatalf("filling: %v", err)
		}
	}
	if _, err := c.CheckAndSetFor(ctx, "last", time.Minute, "agt_last", ""); !errors.Is(err, agentauth.ErrReplayCacheFull) {
		t.Fatalf("full cache: %v; want ErrReplayCacheFull", err)
	}
	// Once everything expired, agt_new and agt_last are let in: their
	// charges went with their entries, or were given back.
	clock.Add(time.Minute)
	for i := range 80 {
		if _, err := c.CheckAndSetFor(ctx, fmt.Sprintf("later%d", i), time.Minute, fmt.Sprintf("agt_l%d", i), ""); err != nil {
			t.Fatalf("later %d: %v", i, err)
		}
	}
	for _, owner := range []string{"agt_new", "agt_last"} {
		if fresh, err := c.CheckAndSetFor(ctx, owner+" again", time.Minute, owner, "hst_new"); !fresh || err != nil {
			t.Fatalf("%s after expiry: fresh = %v, err = %v", owner, fresh, err)
		}
	}
}

// TestVerifierLimitBeforeReplay: with a Limiter, a token beyond its
// agent's limit is refused 429 before its jti is recorded: it takes no
// room in the replay cache and stays good for a retry within its
// lifetime.
func TestVerifierLimitBeforeReplay(t *testing.T) {
	w := shNewWorld(t, 0, func(c *agentauth.VerifierConfig) {
		c.Limiter = ratelimit.NewMemory(0).WithClock(c.Now)
		c.PerAgent = ratelimit.Limit{N: 3, Window: 30 * time.Second}
		c.PerHost = ratelimit.Limit{N: 4, Window: 30 * time.Second}
	})
	ctx := context.Background()
	for i := range 3 {
		if err := w.send("agt_a"); err != nil {
			t.Fatalf("token %d: %v", i+1, err)
		}
	}
	held := w.token("agt_a")
	_, err := w.v.Session(ctx, held)
	shRateLimited(t, "agt_a's fourth token", err, "too many requests for this agent; retry later")
	if w.cache.Len() != 3 {
		t.Fatalf("the cache holds %d entries after a refused token, want 3", w.cache.Len())
	}
	// The host's limit covers its other agents.
	if err := w.send("agt_a2"); err != nil {
		t.Fatalf("agt_a2: %v", err)
	}
	shRateLimited(t, "agt_a2 past the host's limit", w.send("agt_a2"), "too many requests for this agent; retry later")
	if err := w.send("agt_b"); err != nil {
		t.Fatalf("agt_b: %v", err)
	}
	// The refused token was not spent: once the limit allows, it is
	// accepted, once.
	w.clock.Add(20 * time.Second)
	if _, err := w.v.Session(ctx, held); err != nil {
		t.Fatalf("the refused token, retried: %v", err)
	}
	if _, err := w.v.Session(ctx, held); vfOutcomeOf(t, err) != vfReplayed {
		t.Fatalf("the token again: %v; want replayed", err)
	}
}

// TestVerifierAdmit: the Admit hook runs with the session after every
// other check and before the jti is recorded; its refusal leaves the
// token unspent.
func TestVerifierAdmit(t *testing.T) {
	refuse := true
	var seen []string
	w := shNewWorld(t, 0, func(c *agentauth.VerifierConfig) {
		c.Admit = func(_ context.Context, s *agentauth.Session) error {
			seen = append(seen, s.Agent.ID+"@"+s.Host.ID)
			if refuse {
				return agentcap.NewError(agentcap.CodeRateLimited, "not now")
			}
			return nil
		}
	})
	ctx := context.Background()
	tok := w.token("agt_b")
	if _, err := w.v.Session(ctx, tok); agentcap.CodeOf(err) != agentcap.CodeRateLimited {
		t.Fatalf("refused by Admit: %v", err)
	}
	if w.cache.Len() != 0 {
		t.Fatalf("a token Admit refused was recorded")
	}
	// A token failing an earlier check never reaches Admit.
	if _, err := w.v.Session(ctx, w.agents["agt_b"].Token(agentauthtest.Token{Audience: "https://elsewhere.example/"})); vfOutcomeOf(t, err) != vfAudience {
		t.Fatalf("another audience: %v", err)
	}
	refuse = false
	if _, err := w.v.Session(ctx, tok); err != nil {
		t.Fatalf("admitted: %v", err)
	}
	if len(seen) != 2 || seen[0] != "agt_b@hst_b" || seen[1] != "agt_b@hst_b" {
		t.Fatalf("Admit saw %q", seen)
	}
}
