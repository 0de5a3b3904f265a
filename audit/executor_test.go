package audit_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/core"
)

func TestForExecutorKeepsEveryField(t *testing.T) {
	store := audit.NewMemory(nil)
	at := time.Date(2025, 3, 4, 5, 6, 7, 8000, time.UTC)
	in := core.AuditRecord{
		Time: at, Event: "money.transfer", Outcome: "ok", Capability: "transfer_money",
		AgentID: "agt_1", HostID: "hst_1", UserID: "usr_1",
		ArgumentsDigest: "d1", Arguments: json.RawMessage(`{"pin":"[redacted]"}`), ConfirmationID: "c1",
		RequestID: "r1", ClientIP: "192.0.2.1", TraceID: "t1", Duration: 3 * time.Millisecond,
	}
	if err := audit.ForExecutor(store).WriteAudit(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	page, err := store.Query(context.Background(), audit.Query{})
	if err != nil || len(page.Records) != 1 {
		t.Fatalf("%v %+v", err, page)
	}
	got := page.Records[0]
	got.ID = ""
	want := audit.Record{
		Time: at, Event: "money.transfer", Outcome: "ok", AgentID: "agt_1", HostID: "hst_1", UserID: "usr_1",
		Capability: "transfer_money", ArgumentsDigest: "d1", ConfirmationID: "c1", RequestID: "r1",
		TraceID: "t1", ClientIP: "192.0.2.1", Duration: 3 * time.Millisecond, Arguments: json.RawMessage(`{"pin":"[redacted]"}`),
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Errorf("got  %s\nwant %s", gj, wj)
	}
}
