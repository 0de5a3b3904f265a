package provider_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/provider"
)

// TestGrantTTL checks the per-capability grant lifetime (protocol §3.3
// expires_at): it runs from the approval, is shown in status, and is
// enforced at execute (403 capability_not_granted once it has passed),
// while grants without a lifetime are unaffected and the expired
// capability can be asked for again.
func TestGrantTTL(t *testing.T) {
	e := newEnv(t, func(c *provider.Config) {
		c.Policy.GrantTTL = provider.GrantTTLs(map[string]time.Duration{"check_balance": time.Hour})
	})
	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "a", "capabilities": []any{"echo", "check_balance"}})
	id := r.str("agent_id")
	e.clock.Advance(5 * time.Minute) // the hour starts at the approval, not the request
	approvedAt := e.clock.Now()
	e.approve(r, "alice", nil)

	st := e.do(http.MethodGet, provider.PathStatus+"?agent_id="+id, e.hostToken(h, nil), nil)
	expiry := map[string]any{}
	for _, g := range st.body["agent_capability_grants"].([]any) {
		m := g.(map[string]any)
		expiry[m["capability"].(string)] = m["expires_at"]
	}
	want := approvedAt.Add(time.Hour).UTC().Format(time.RFC3339)
	if expiry["check_balance"] != want || expiry["echo"] != nil {
		t.Fatalf("expires_at in status: %v, want check_balance at %s and echo never", expiry, want)
	}

	exec := func(name string) response {
		return e.do(http.MethodPost, "/capability/execute", e.agentToken(a, id, e.url+"/capability/execute", nil),
			map[string]any{"capability": name, "arguments": map[string]any{"message": "x"}})
	}
	if x := exec("check_balance"); x.status != http.StatusOK {
		t.Fatalf("within the lifetime: %d %s", x.status, x.raw)
	}
	e.clock.Advance(time.Hour)
	if x := exec("check_balance"); x.status != http.StatusForbidden || x.code() != agentcap.CodeCapabilityNotGranted {
		t.Errorf("past the lifetime: %d %s", x.status, x.raw)
	}
	if x := exec("echo"); x.status != http.StatusOK {
		t.Errorf("a grant without a lifetime: %d %s", x.status, x.raw)
	}
	rc := e.do(http.MethodPost, provider.PathRequestCapability, e.agentToken(a, id, e.url, nil), map[string]any{"capabilities": []any{"check_balance"}})
	if rc.status != http.StatusOK || grants(rc)["check_balance"] != "pending" {
		t.Errorf("asking again for the expired capability: %d %s", rc.status, rc.raw)
	}
}
