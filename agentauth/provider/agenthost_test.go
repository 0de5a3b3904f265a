package provider_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/store"
)

// agentHostStore is a store that reads an agent and its host together
// (store.AgentHostReader) and counts its reads.
type agentHostStore struct {
	store.Store
	both, hosts *atomic.Int64
}

func (s agentHostStore) GetAgentAndHost(ctx context.Context, id string) (*store.Agent, *store.Host, error) {
	s.both.Add(1)
	a, err := s.Store.GetAgent(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	h, err := s.Store.GetHost(ctx, a.HostID)
	if err != nil {
		return nil, nil, err
	}
	return a, h, nil
}

func (s agentHostStore) GetHost(ctx context.Context, id string) (*store.Host, error) {
	s.hosts.Add(1)
	return s.Store.GetHost(ctx, id)
}

// TestAgentAndHostReadTogether: with a store that reads an agent and its
// host at once, a verified request reads them in one step and reads no
// host on its own; the host read with the agent is the one checked, so a
// revoked host refuses the request.
func TestAgentAndHostReadTogether(t *testing.T) {
	var both, hosts atomic.Int64
	e := newEnv(t, func(c *provider.Config) {
		c.Store = agentHostStore{Store: c.Store, both: &both, hosts: &hosts}
	})
	hk, a := newKey(t), newKey(t)
	id := e.connected(hk, a, "alice", "echo")
	execute := func() response {
		t.Helper()
		return e.do(http.MethodPost, "/capability/execute", e.agentToken(a, id, e.url+"/capability/execute", nil),
			map[string]any{"capability": "echo", "arguments": map[string]any{"message": "hi"}})
	}
	both.Store(0)
	hosts.Store(0)
	for range 3 {
		if r := execute(); r.status != http.StatusOK {
			t.Fatalf("execute: %d %s", r.status, r.raw)
		}
	}
	if both.Load() != 3 || hosts.Load() != 0 {
		t.Errorf("3 requests: %d reads of agent and host, %d of a host alone; want 3 and 0", both.Load(), hosts.Load())
	}
	ag, err := e.st.GetAgent(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.UpdateHostStatus(context.Background(), ag.HostID, []string{agentcap.StatusActive}, agentcap.StatusRevoked); err != nil {
		t.Fatal(err)
	}
	if r := execute(); r.status != http.StatusForbidden {
		t.Errorf("execute after the host's revocation: %d %s, want 403", r.status, r.raw)
	}
}
