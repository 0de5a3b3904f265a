package provider_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/core"
)

// TestGrantAutonomousPolicy checks Policy.GrantAutonomous at registration
// and on a capability request: an autonomous agent gets what the policy
// allows without a user, never a capability that needs proof of presence,
// and the rest is denied with a reason.
func TestGrantAutonomousPolicy(t *testing.T) {
	e := newEnv(t, func(c *provider.Config) {
		c.Policy.HostDefaults = nil
		c.Policy.GrantAutonomous = func(_ context.Context, _ *store.Host, def *core.Definition) bool {
			// Everything, to show that webauthn stays out regardless.
			return def.Name() != "check_balance"
		}
	})
	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "worker", "mode": "autonomous", "capabilities": []any{"echo", "check_balance", "transfer"}})
	if r.status != http.StatusOK || r.str("status") != "active" {
		t.Fatalf("register: %d %s", r.status, r.raw)
	}
	if diff := cmp.Diff(map[string]string{"echo": "active", "check_balance": "denied", "transfer": "denied"}, grants(r)); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}
	id := r.str("agent_id")
	if x := e.do(http.MethodPost, "/capability/execute", e.agentToken(a, id, e.url+"/capability/execute", nil),
		map[string]any{"capability": "echo", "arguments": map[string]any{"message": "hi"}}); x.status != http.StatusOK {
		t.Errorf("execute the granted capability: %d %s", x.status, x.raw)
	}

	// The same policy answers a later request.
	b := newKey(t)
	r2 := e.register(h, b, map[string]any{"name": "second", "mode": "autonomous"})
	rc := e.do(http.MethodPost, provider.PathRequestCapability, e.agentToken(b, r2.str("agent_id"), e.url, nil),
		map[string]any{"capabilities": []any{"echo", "check_balance"}})
	if rc.status != http.StatusOK || rc.body["approval"] != nil {
		t.Fatalf("request: %d %s", rc.status, rc.raw)
	}
	if diff := cmp.Diff(map[string]string{"echo": "active", "check_balance": "denied"}, grants(rc)); diff != "" {
		t.Errorf("requested grants (-want +got):\n%s", diff)
	}
}

// TestDefaultGrantAutonomous pins the rule without a policy: the host's
// defaults, less what needs proof of presence.
func TestDefaultGrantAutonomous(t *testing.T) {
	reg := testRegistry(t)
	host := &store.Host{DefaultCapabilities: []string{"echo", "transfer"}}
	for _, tt := range []struct {
		name string
		want bool
	}{{"echo", true}, {"check_balance", false}, {"transfer", false}} {
		def, _ := reg.Lookup(tt.name)
		if got := provider.DefaultGrantAutonomous(context.Background(), host, def); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
