package agentauth_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// Two agents whose (id, jti) pairs would join to the same plain key each
// get to use their token once: neither spends the other's.
func TestVerifierReplayKeysOfSeparatorIDsDoNotCollide(t *testing.T) {
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_sep", UserID: "user_alice", Rand: rand.NewChaCha8([32]byte{3}), Clock: htClock})
	ab := host.NewAgent(agentauthtest.Agent{ID: "agt:a:b"}).Grant("check_balance", nil)
	a := host.NewAgent(agentauthtest.Agent{ID: "agt:a"}).Grant("check_balance", nil)
	dir, err := agentauthtest.NewDirectory([]*agentauthtest.Host{host}, []*agentauthtest.Agent{ab, a})
	if err != nil {
		t.Fatal(err)
	}
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: dir, Audiences: []string{htAudience}, Now: htClock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first := ab.Token(agentauthtest.Token{Audience: htAudience, JTI: "c"})   // agt:a:b + c
	second := a.Token(agentauthtest.Token{Audience: htAudience, JTI: "b:c"}) // agt:a + b:c
	for _, tok := range []string{first, second} {
		if _, err := v.Session(ctx, tok); err != nil {
			t.Fatalf("first use: %v", err)
		}
	}
	for _, tok := range []string{first, second} {
		if _, err := v.Session(ctx, tok); err == nil {
			t.Fatal("a token was accepted twice")
		}
	}
}
