package provider_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/ratelimit"
)

// TestStatusSlowDownOnlyWhilePending pins where slow_down belongs. RFC
// 8628 §3.5, which protocol §7.1 and §5.13 adopt for polling, answers
// slow_down to a client polling a pending authorization: here, a pending
// agent (registration or reactivation waiting for its user). The status
// of an active agent is the §5.5 read of its record, even while one of
// its capability requests waits; such reads are limited like any other
// request, with 429 rate_limited and Retry-After (§8.13).
func TestStatusSlowDownOnlyWhilePending(t *testing.T) {
	e := newEnv(t, func(c *provider.Config) {
		c.RateLimits = provider.RateLimits{Limiter: ratelimit.NewMemory(0).WithClock(c.Now), PerHost: ratelimit.PerMinute(6)}
	})
	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "a", "capabilities": []any{"echo"}})
	id := r.str("agent_id")
	status := func() response {
		return e.do(http.MethodGet, provider.PathStatus+"?agent_id="+id, e.hostToken(h, nil), nil)
	}
	// Pending: the second poll within the interval is slow_down.
	if st := status(); st.status != http.StatusOK {
		t.Fatalf("first poll: %d %s", st.status, st.raw)
	}
	if st := status(); st.status != http.StatusBadRequest || st.code() != agentcap.CodeSlowDown {
		t.Fatalf("fast poll of a pending agent: %d %s", st.status, st.raw)
	}
	e.approve(r, "alice", nil)
	e.clock.Advance(time.Second)

	// Active, with a capability request pending: reads are reads.
	rc := e.do(http.MethodPost, provider.PathRequestCapability, e.agentToken(a, id, e.url, nil),
		map[string]any{"capabilities": []any{"check_balance"}})
	if rc.status != http.StatusOK || grants(rc)["check_balance"] != "pending" {
		t.Fatalf("request: %d %s", rc.status, rc.raw)
	}
	for i := range 2 {
		if st := status(); st.status != http.StatusOK || st.str("status") != "active" {
			t.Fatalf("status read %d of an active agent: %d %s", i, st.status, st.raw)
		}
	}
	// The host's budget (6 a minute, 5 used by now) is what bounds them.
	var last response
	for range 3 {
		last = status()
	}
	if last.status != http.StatusTooManyRequests || last.code() != "rate_limited" || last.header.Get("Retry-After") == "" {
		t.Errorf("past the host's limit: %d %s Retry-After %q", last.status, last.raw, last.header.Get("Retry-After"))
	}
	// The RFC 8628 polling endpoint keeps its own rule.
	e.clock.Advance(ratelimitWindow)
	first := e.do(http.MethodPost, provider.PathApprovalPoll, e.hostToken(h, nil), map[string]any{"agent_id": id})
	second := e.do(http.MethodPost, provider.PathApprovalPoll, e.hostToken(h, nil), map[string]any{"agent_id": id})
	if first.code() != agentcap.CodeAuthorizationPending || second.code() != agentcap.CodeSlowDown {
		t.Errorf("RFC 8628 polls: %s then %s", first.raw, second.raw)
	}
}

// ratelimitWindow is the window of the limits the status test sets.
const ratelimitWindow = time.Minute
