package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/sqlstore"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// One SQLite file holds every store; each feature is handed its own. The
// provider's records are also the directory a verifier reads.
func Example() {
	dir, err := os.MkdirTemp("", "agentcap")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, err := sqlstore.OpenSQLite(ctx, filepath.Join(dir, "agentcap.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()

	var trail audit.Store = db.Audit()
	if err := trail.Write(ctx, audit.Record{Event: audit.EventHostRegistered, Outcome: audit.OutcomeOK}); err != nil {
		panic(err)
	}
	page, err := trail.Query(ctx, audit.Query{})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(page.Records), "record")

	var records store.Store = db.Provider()
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1"})
	agent := host.NewAgent(agentauthtest.Agent{ID: "agt_1"})
	if err := records.CreateHost(ctx, &store.Host{ID: host.ID, PublicKey: host.PublicJWK(), Status: agentcap.StatusActive}); err != nil {
		panic(err)
	}
	if err := records.CreateAgent(ctx, &store.Agent{ID: agent.ID, HostID: host.ID, Mode: agentcap.ModeDelegated, Status: agentcap.StatusActive,
		AgentKey: store.AgentKey{PublicKey: agent.PublicJWK()},
		Grants:   []store.Grant{{Capability: "check_balance", Status: agentcap.StatusActive}}}); err != nil {
		panic(err)
	}
	const location = "https://api.example.com/capability/execute"
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: records, Audiences: []string{location}})
	if err != nil {
		panic(err)
	}
	sess, err := v.Session(ctx, agent.Token(agentauthtest.Token{Audience: location}))
	if err != nil {
		panic(err)
	}
	fmt.Println(sess.Agent.ID, sess.Host.ID, sess.Agent.Grants[0].Capability)
	// Output:
	// 1 record
	// agt_1 hst_1 check_balance
}
