package store_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

func jwkFromSeed(b byte) []byte {
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = b
	return agentauthtest.PublicJWK(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))
}

// A registration creates a pending agent; the approval that activates it
// is compare-and-set, so a second approval of the same agent loses.
func ExampleNewMemory() {
	ctx := context.Background()
	s := store.NewMemory(nil)
	defer s.Close()

	_ = s.CreateHost(ctx, &store.Host{ID: "hst_1", PublicKey: jwkFromSeed(1), Status: agentcap.StatusActive})
	_ = s.CreateAgent(ctx, &store.Agent{
		ID: "agt_1", HostID: "hst_1", Name: "Bank balance checker",
		Mode: agentcap.ModeDelegated, Status: agentcap.StatusPending,
		AgentKey: store.AgentKey{PublicKey: jwkFromSeed(2)},
		Grants:   []store.Grant{{Capability: "check_balance", Status: agentcap.StatusPending}},
	})

	p := store.Policy{SessionTTL: 30 * time.Minute, MaxLifetime: 24 * time.Hour}
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	fmt.Println(s.ActivateAgent(ctx, "agt_1", []string{agentcap.StatusPending}, now, p))
	err := s.ActivateAgent(ctx, "agt_1", []string{agentcap.StatusPending}, now, p)
	var se *store.StatusError
	fmt.Println(errors.As(err, &se), se.Status)

	a, _ := s.GetAgent(ctx, "agt_1")
	fmt.Println(a.Status, a.ExpiresAt.Format(time.RFC3339))
	// Output:
	// <nil>
	// true active
	// active 2030-01-01T12:30:00Z
}

func ExamplePolicy_Deadline() {
	p := store.Policy{SessionTTL: 30 * time.Minute, MaxLifetime: 24 * time.Hour, AbsoluteLifetime: 7 * 24 * time.Hour}
	created := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	activated := created.Add(23*time.Hour + 50*time.Minute)
	a := &store.Agent{CreatedAt: created, ActivatedAt: &activated}
	fmt.Println(p.Deadline(a).Format(time.RFC3339))
	// Output: 2030-01-02T00:20:00Z
}

func ExampleNewMemory_sweep() {
	ctx := context.Background()
	s := store.NewMemory(nil)
	now := time.Date(2030, 1, 10, 0, 0, 0, 0, time.UTC)
	_ = s.CreateHost(ctx, &store.Host{ID: "hst_1", PublicKey: jwkFromSeed(1), Status: agentcap.StatusActive})
	used := now.Add(-time.Hour)
	_ = s.CreateAgent(ctx, &store.Agent{ID: "agt_idle", HostID: "hst_1", Mode: agentcap.ModeDelegated, Status: agentcap.StatusActive,
		AgentKey: store.AgentKey{PublicKey: jwkFromSeed(2)}, CreatedAt: now.Add(-2 * time.Hour), LastUsedAt: &used})
	_ = s.CreateAgent(ctx, &store.Agent{ID: "agt_stale", HostID: "hst_1", Mode: agentcap.ModeDelegated, Status: agentcap.StatusPending,
		AgentKey: store.AgentKey{PublicKey: jwkFromSeed(3)}, CreatedAt: now.Add(-48 * time.Hour)})

	r, _ := s.Sweep(ctx, now, store.Policy{SessionTTL: 30 * time.Minute, PendingTTL: 24 * time.Hour})
	fmt.Printf("%+v\n", r)
	// Output: {AgentsExpired:1 AgentsRevoked:0 AgentsDeleted:1 HostsDeleted:0 ApprovalsDeleted:0 NoncesDeleted:0}
}
