package provider_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/store"
)

// TestClaimingOnLink follows protocol §2.10 through the provider: a host
// runs an autonomous agent, then registers a delegated agent that Alice
// approves, which links the host to her. The autonomous agent is then
// claimed: its status is claimed (terminal: it can neither act nor be
// reactivated), its grants are revoked with the reason, its history is
// Alice's (user_id), its pending request is closed, and the application
// is told so that it can move the agent's resources to Alice.
func TestClaimingOnLink(t *testing.T) {
	var mu sync.Mutex
	var claims []provider.Claim
	e := newEnv(t, func(c *provider.Config) {
		c.OnClaim = func(_ context.Context, cl provider.Claim) error {
			mu.Lock()
			claims = append(claims, cl)
			mu.Unlock()
			return nil
		}
	})
	h, robot := newKey(t), newKey(t)
	r := e.register(h, robot, map[string]any{"name": "worker", "mode": "autonomous", "capabilities": []any{"echo"}})
	if r.str("status") != "active" || grants(r)["echo"] != "active" {
		t.Fatalf("autonomous agent: %s", r.raw)
	}
	robotID, hostID := r.str("agent_id"), r.str("host_id")
	exec := func() response {
		return e.do(http.MethodPost, "/capability/execute", e.agentToken(robot, robotID, e.url+"/capability/execute", nil),
			map[string]any{"capability": "echo", "arguments": map[string]any{"message": "x"}})
	}
	if x := exec(); x.status != http.StatusOK {
		t.Fatalf("execute before the claim: %d %s", x.status, x.raw)
	}

	d := e.register(h, newKey(t), map[string]any{"name": "assistant", "capabilities": []any{"echo"}})
	if d.str("status") != "pending" {
		t.Fatalf("delegated agent: %s", d.raw)
	}
	e.approve(d, "alice", nil)

	st := e.do(http.MethodGet, provider.PathStatus+"?agent_id="+robotID, e.hostToken(h, nil), nil)
	if st.status != http.StatusOK || st.str("status") != agentcap.StatusClaimed || st.str("user_id") != "alice" {
		t.Fatalf("status of the claimed agent: %d %s", st.status, st.raw)
	}
	gs := st.body["agent_capability_grants"].([]any)
	want := []any{map[string]any{"capability": "echo", "status": "denied", "reason": store.ClaimedReason}}
	if diff := cmp.Diff(want, gs); diff != "" {
		t.Errorf("claimed grants (-want +got):\n%s", diff)
	}
	if x := exec(); x.status != http.StatusForbidden || x.code() != agentcap.CodeAgentClaimed {
		t.Errorf("execute after the claim: %d %s", x.status, x.raw)
	}
	if x := e.do(http.MethodPost, provider.PathReactivate, e.hostToken(h, nil), map[string]any{"agent_id": robotID}); x.status != http.StatusForbidden || x.code() != agentcap.CodeAgentClaimed {
		t.Errorf("reactivate a claimed agent: %d %s", x.status, x.raw)
	}
	if x := e.register(h, robot, map[string]any{"name": "worker"}); x.status != http.StatusConflict || x.code() != agentcap.CodeAgentExists {
		t.Errorf("re-register the claimed key: %d %s", x.status, x.raw)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]provider.Claim{{UserID: "alice", HostID: hostID, AgentIDs: []string{robotID}}}, claims); diff != "" {
		t.Errorf("OnClaim (-want +got):\n%s", diff)
	}
}

// TestClaimClosesPendingRequests: a claimed agent's request still waiting
// for a user can no longer be approved.
func TestClaimClosesPendingRequests(t *testing.T) {
	e := newEnv(t)
	h, robot := newKey(t), newKey(t)
	r := e.register(h, robot, map[string]any{"name": "worker", "mode": "autonomous"})
	robotID := r.str("agent_id")
	aps := []*store.Approval{{ID: "apr_robot", Method: store.MethodDeviceAuthorization, AgentID: robotID, HostID: r.str("host_id"),
		UserCode: "BCDFGHJK", Status: store.ApprovalPending, ExpiresAt: e.clock.Now().Add(10 * time.Minute),
		Capabilities: []store.RequestedCapability{{Name: "check_balance"}}}}
	if err := e.st.CreateApproval(context.Background(), aps[0]); err != nil {
		t.Fatal(err)
	}
	e.approve(e.register(h, newKey(t), map[string]any{"name": "assistant"}), "alice", nil)
	got, err := e.st.GetApproval(context.Background(), "apr_robot")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.ApprovalDenied || got.UserID != store.ClaimedBy {
		t.Errorf("the claimed agent's request is %s by %q", got.Status, got.UserID)
	}
}

// TestLinkedHostRegistersNoAutonomousAgent: once a host has a user, an
// autonomous agent under it would be claimed at birth; registration
// refuses it, as the reference provider does.
func TestLinkedHostRegistersNoAutonomousAgent(t *testing.T) {
	e := newEnv(t)
	h := newKey(t)
	e.approve(e.register(h, newKey(t), map[string]any{"name": "assistant"}), "alice", nil)
	r := e.register(h, newKey(t), map[string]any{"name": "worker", "mode": "autonomous"})
	if r.status != http.StatusBadRequest || r.code() != agentcap.CodeUnsupportedMode {
		t.Errorf("%d %s", r.status, r.raw)
	}
}
