package agentauth_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// A Verifier reads a MemoryDirectory without copying; these tests pin
// what that must not change: Put still takes effect on the next request,
// a session keeps the record it was verified with, and the directory's
// own lookups still return copies.
func TestVerifierOverMemoryDirectorySeesReplacedRecords(t *testing.T) {
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_lend", UserID: "user_alice", Rand: rand.NewChaCha8([32]byte{5}), Clock: htClock})
	agent := host.NewAgent(agentauthtest.Agent{ID: "agt_lend"}).Grant("check_balance", map[string]any{"account_id": "acc_123"})
	dir := agentauth.NewMemoryDirectory()
	if err := dir.PutHost(host.Record()); err != nil {
		t.Fatal(err)
	}
	if err := dir.PutAgent(agent.Record()); err != nil {
		t.Fatal(err)
	}
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: dir, Audiences: []string{htAudience}, Now: htClock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := v.Session(ctx, agent.Token(agentauthtest.Token{Audience: htAudience}))
	if err != nil {
		t.Fatal(err)
	}

	// A copy from the directory is the caller's to change.
	c, err := dir.Agent(ctx, "agt_lend")
	if err != nil {
		t.Fatal(err)
	}
	c.Status = agentcap.StatusRevoked
	c.Grants[0].Constraints["account_id"][1] = 'X'
	if _, err := v.Session(ctx, agent.Token(agentauthtest.Token{Audience: htAudience})); err != nil {
		t.Fatalf("changing a looked-up copy changed the directory: %v", err)
	}

	// Replacing the record takes effect at once, and leaves the record an
	// earlier session holds as it was.
	revoked := agent.Record()
	revoked.Status = agentcap.StatusRevoked
	if err := dir.PutAgent(revoked); err != nil {
		t.Fatal(err)
	}
	_, err = v.Session(ctx, agent.Token(agentauthtest.Token{Audience: htAudience}))
	var ae *agentcap.Error
	if !errors.As(err, &ae) || ae.Code != agentcap.CodeAgentRevoked {
		t.Fatalf("after revocation: %v, want %s", err, agentcap.CodeAgentRevoked)
	}
	if first.Agent.Status != agentcap.StatusActive || string(first.Agent.Grants[0].Constraints["account_id"]) != `"acc_123"` {
		t.Fatalf("an earlier session's record changed: %+v", first.Agent)
	}
}
