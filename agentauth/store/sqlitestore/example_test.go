package sqlitestore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/agentauth/store/sqlitestore"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// The same store is the provider's state and the verifier's directory.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "agentauth")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, filepath.Join(dir, "agentauth.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1"})
	agent := host.NewAgent(agentauthtest.Agent{ID: "agt_1"})
	if err := s.CreateHost(ctx, &store.Host{ID: host.ID, PublicKey: host.PublicJWK(), Status: agentcap.StatusActive}); err != nil {
		log.Fatal(err)
	}
	if err := s.CreateAgent(ctx, &store.Agent{ID: agent.ID, HostID: host.ID, Mode: agentcap.ModeDelegated, Status: agentcap.StatusActive,
		AgentKey: store.AgentKey{PublicKey: agent.PublicJWK()},
		Grants:   []store.Grant{{Capability: "check_balance", Status: agentcap.StatusActive}}}); err != nil {
		log.Fatal(err)
	}

	const location = "https://api.example.com/capability/execute"
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: s, Audiences: []string{location}})
	if err != nil {
		log.Fatal(err)
	}
	sess, err := v.Session(ctx, agent.Token(agentauthtest.Token{Audience: location}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sess.Agent.ID, sess.Host.ID, sess.Agent.Grants[0].Capability)
	// Output: agt_1 hst_1 check_balance
}
