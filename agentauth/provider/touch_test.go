package provider_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/auth"
)

// touchCounter is a store that counts TouchAgent calls.
type touchCounter struct {
	store.Store
	n *atomic.Int64
}

func (s touchCounter) TouchAgent(ctx context.Context, id string, now time.Time, p store.Policy) error {
	s.n.Add(1)
	return s.Store.TouchAgent(ctx, id, now, p)
}

// TestTouchInterval: requests of an agent whose last use was recorded
// less than Config.TouchInterval before are not recorded again; the
// first one past the interval is, and extends the session from there.
func TestTouchInterval(t *testing.T) {
	var touches atomic.Int64
	e := newEnv(t, func(c *provider.Config) {
		c.Store = touchCounter{Store: c.Store, n: &touches}
		c.Lifetimes = store.Policy{SessionTTL: time.Hour}
	})
	a := newKey(t)
	id := e.connected(newKey(t), a, "alice", "echo")
	execute := func() {
		t.Helper()
		r := e.do(http.MethodPost, "/capability/execute", e.agentToken(a, id, e.url+"/capability/execute", nil),
			map[string]any{"capability": "echo", "arguments": map[string]any{"message": "hi"}})
		if r.status != http.StatusOK {
			t.Fatalf("execute: %d %s", r.status, r.raw)
		}
	}
	recorded := func(what string, wantTouches int64, wantUsed time.Time) {
		t.Helper()
		ag, err := e.st.GetAgent(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if got := touches.Load(); got != wantTouches {
			t.Errorf("%s: %d touches, want %d", what, got, wantTouches)
		}
		if ag.LastUsedAt == nil || !ag.LastUsedAt.Equal(wantUsed) {
			t.Errorf("%s: last used at %v, want %v", what, ag.LastUsedAt, wantUsed)
		}
		if want := wantUsed.Add(time.Hour); ag.ExpiresAt == nil || !ag.ExpiresAt.Equal(want) {
			t.Errorf("%s: expires at %v, want %v", what, ag.ExpiresAt, want)
		}
	}
	first := e.clock.Now()
	for range 5 {
		execute()
	}
	recorded("5 requests at once", 1, first)
	e.clock.Advance(provider.DefaultTouchInterval - time.Millisecond)
	execute()
	recorded("within the interval", 1, first)
	e.clock.Advance(time.Millisecond)
	execute()
	recorded("past the interval", 2, e.clock.Now())
}

// TestTouchEveryRequest: a negative Config.TouchInterval records every
// request.
func TestTouchEveryRequest(t *testing.T) {
	var touches atomic.Int64
	e := newEnv(t, func(c *provider.Config) {
		c.Store = touchCounter{Store: c.Store, n: &touches}
		c.TouchInterval = -1
	})
	a := newKey(t)
	id := e.connected(newKey(t), a, "alice", "echo")
	for range 3 {
		r := e.do(http.MethodPost, "/capability/execute", e.agentToken(a, id, e.url+"/capability/execute", nil),
			map[string]any{"capability": "echo", "arguments": map[string]any{"message": "hi"}})
		if r.status != http.StatusOK {
			t.Fatalf("execute: %d %s", r.status, r.raw)
		}
	}
	if got := touches.Load(); got != 3 {
		t.Errorf("%d touches, want 3", got)
	}
}

// TestTouchLapsedWithinInterval: an agent whose last use was just
// recorded is still expired, or revoked, by a request when it has
// lapsed under the provider's lifetimes: here a second provider over
// the same store whose clocks the first one's records do not reflect.
func TestTouchLapsedWithinInterval(t *testing.T) {
	for _, tc := range []struct {
		name       string
		lifetimes  store.Policy
		code       agentcap.Code
		wantStatus string
	}{
		{"not lapsed", store.Policy{SessionTTL: time.Hour, MaxLifetime: 2 * time.Hour, AbsoluteLifetime: 3 * time.Hour}, "", agentcap.StatusActive},
		{"past max lifetime", store.Policy{MaxLifetime: time.Hour}, agentcap.CodeAgentExpired, agentcap.StatusExpired},
		{"past absolute lifetime", store.Policy{AbsoluteLifetime: time.Hour}, agentcap.CodeAbsoluteLifetimeExceeded, agentcap.StatusRevoked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t) // no lifetime clocks: the agent never expires
			a := newKey(t)
			id := e.connected(newKey(t), a, "alice", "echo")
			e.clock.Advance(time.Hour)
			r := e.do(http.MethodPost, "/capability/execute", e.agentToken(a, id, e.url+"/capability/execute", nil),
				map[string]any{"capability": "echo", "arguments": map[string]any{"message": "hi"}})
			if r.status != http.StatusOK {
				t.Fatalf("execute: %d %s", r.status, r.raw)
			}
			var touches atomic.Int64
			p2, err := provider.New(provider.Config{
				Issuer:       e.url,
				ProviderName: "second",
				Store:        touchCounter{Store: e.st, n: &touches},
				Registry:     testRegistry(t),
				Lifetimes:    tc.lifetimes,
				Now:          e.clock.Now,
			})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p2.Verify(context.Background(), &auth.Request{Authorization: "Bearer " + e.agentToken(a, id, e.url+"/capability/execute", nil)})
			var ae *agentcap.Error
			switch {
			case tc.code == "" && err != nil:
				t.Errorf("session: %v", err)
			case tc.code != "" && (!errors.As(err, &ae) || ae.Code != tc.code):
				t.Errorf("session: %v, want %s", err, tc.code)
			}
			wantTouches := int64(1)
			if tc.code == "" {
				wantTouches = 0
			}
			if got := touches.Load(); got != wantTouches {
				t.Errorf("%d touches, want %d", got, wantTouches)
			}
			ag, err := e.st.GetAgent(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if ag.Status != tc.wantStatus {
				t.Errorf("stored status %q, want %q", ag.Status, tc.wantStatus)
			}
		})
	}
}
