package provider_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/store"
)

// downStore is a store whose reads of hosts and agents fail while down
// is set, and whose updates of an agent's last use fail while touchDown
// is, as a database that is restarting does.
type downStore struct {
	store.Store
	down, touchDown *atomic.Bool
}

func (s downStore) TouchAgent(ctx context.Context, id string, now time.Time, p store.Policy) error {
	if s.touchDown.Load() {
		return errDown
	}
	return s.Store.TouchAgent(ctx, id, now, p)
}

var errDown = errors.New("connection refused")

func (s downStore) GetAgent(ctx context.Context, id string) (*store.Agent, error) {
	if s.down.Load() {
		return nil, errDown
	}
	return s.Store.GetAgent(ctx, id)
}

func (s downStore) HostByThumbprint(ctx context.Context, thumbprint string) (*store.Host, error) {
	if s.down.Load() {
		return nil, errDown
	}
	return s.Store.HostByThumbprint(ctx, thumbprint)
}

// downReplay is a replay cache that fails while down is set.
type downReplay struct {
	agentauth.ReplayCache
	down *atomic.Bool
}

func (r downReplay) CheckAndSet(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if r.down.Load() {
		return false, errDown
	}
	return r.ReplayCache.CheckAndSet(ctx, key, ttl)
}

// TestStoresDown refuses, while the store or the replay cache does not
// answer, the requests that need them with 503 temporarily_unavailable
// and Retry-After: 1, at the capability location and at the provider's
// host-authenticated endpoints alike, and serves them again once they
// are back.
func TestStoresDown(t *testing.T) {
	var storeDown, touchDown, replayDown atomic.Bool
	e := newEnv(t, func(c *provider.Config) {
		c.Store = downStore{Store: c.Store, down: &storeDown, touchDown: &touchDown}
		c.Replay = downReplay{ReplayCache: agentauth.NewMemoryReplayCache(0), down: &replayDown}
		// Every request is recorded on its agent, so that the touch of
		// each one meets the store.
		c.TouchInterval = -1
	})
	h, a := newKey(t), newKey(t)
	id := e.connected(h, a, "alice", "echo")
	execute := func() response {
		return e.do(http.MethodPost, "/capability/execute", e.agentToken(a, id, e.url+"/capability/execute", nil),
			map[string]any{"capability": "echo", "arguments": map[string]any{"message": "hi"}})
	}
	status := func() response {
		return e.do(http.MethodGet, provider.PathStatus+"?agent_id="+id, e.hostToken(h, nil), nil)
	}
	if r := execute(); r.status != http.StatusOK {
		t.Fatalf("execute: %d %s", r.status, r.raw)
	}
	tests := []struct {
		name string
		down *atomic.Bool
		call func() response
		msg  string
	}{
		{"execute, store down", &storeDown, execute, "the directory of agents and hosts cannot be read now; retry later"},
		{"execute, replay cache down", &replayDown, execute, "used tokens cannot be checked now; retry later"},
		{"status, store down", &storeDown, status, "the provider's records cannot be reached now; retry later"},
		{"execute, agent cannot be touched", &touchDown, execute, "the provider's records cannot be reached now; retry later"},
		{"status, replay cache down", &replayDown, status, "used tokens cannot be checked now; retry later"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.down.Store(true)
			r := tt.call()
			tt.down.Store(false)
			if r.status != http.StatusServiceUnavailable || r.code() != agentcap.CodeTemporarilyUnavailable ||
				r.str("message") != tt.msg || r.header.Get("Retry-After") != "1" || r.body["retry_after"] != 1.0 {
				t.Errorf("while down: %d %s, Retry-After %q", r.status, r.raw, r.header.Get("Retry-After"))
			}
			if r := tt.call(); r.status != http.StatusOK {
				t.Errorf("once back: %d %s", r.status, r.raw)
			}
		})
	}
}
