package audit_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/agentcap/agentcap/audit"
)

func Example() {
	trail := audit.NewMemory(nil)
	ctx := context.Background()
	at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	_ = trail.Write(ctx, audit.Record{ID: "1", Time: at, Event: audit.EventAgentRegistered, Outcome: audit.OutcomeOK, UserID: "alice", AgentID: "agt_1"})
	_ = trail.Write(ctx, audit.Record{ID: "2", Time: at.Add(time.Minute), Event: "transfer_money", Outcome: "constraint_violated", UserID: "alice", AgentID: "agt_1", Capability: "transfer_money"})

	page, _ := trail.Query(ctx, audit.Query{UserID: "alice", Limit: 1})
	fmt.Println(page.Records[0].Event, page.Records[0].Outcome, page.NextCursor != "")

	// Every record of alice's, as JSON Lines.
	_, _ = audit.Export(ctx, trail, audit.Query{UserID: "alice"}, os.Stdout, 0)
	// Output:
	// transfer_money constraint_violated true
	// {"id":"2","time":"2026-05-01T09:01:00Z","event":"transfer_money","outcome":"constraint_violated","agent_id":"agt_1","user_id":"alice","capability":"transfer_money"}
	// {"id":"1","time":"2026-05-01T09:00:00Z","event":"agent.registered","outcome":"ok","agent_id":"agt_1","user_id":"alice"}
}
