package main_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/sqlstore"
)

// TestAuditTrail runs the bank as its own provider over an SQLite file:
// Alice approves an agent, which reads her balance and then tries Bob's.
// The file then holds the trail, calls and provider changes alike, and
// Alice reads it on the Activity page.
func TestAuditTrail(t *testing.T) {
	bin := buildBank(t)
	db := filepath.Join(t.TempDir(), "bank.db")
	p := startProviderBank(t, bin, db)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, st, _ := connectBalanceReader(ctx, t, p.url, p.logs.String)
	if _, err := a.Execute(ctx, "check_balance", map[string]string{"account_id": "acc_123"}); err != nil {
		t.Fatalf("execute: %v", err)
	}
	if _, err := a.Execute(ctx, "check_balance", map[string]string{"account_id": "acc_456"}); err == nil {
		t.Fatal("Alice's agent read Bob's balance")
	}

	// The bank's own file, opened beside the running bank.
	sdb, err := sqlstore.OpenSQLite(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	trail := sdb.Audit()
	page, err := trail.Query(ctx, audit.Query{UserID: "user_alice"})
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, r := range page.Records {
		events = append(events, r.Event+":"+r.Outcome)
	}
	want := []string{"check_balance:account_not_found", "check_balance:ok", audit.EventApprovalApproved + ":ok"}
	if len(events) < len(want) || strings.Join(events[:3], " ") != strings.Join(want, " ") {
		t.Fatalf("Alice's records, newest first: %v, want %v first", events, want)
	}
	for _, r := range page.Records[:2] {
		if r.AgentID != st.AgentID || r.HostID == "" || r.RequestID == "" || r.ClientIP != "127.0.0.1" ||
			r.ArgumentsDigest == "" || r.Arguments != nil {
			t.Errorf("call record %+v", r)
		}
	}
	registered, err := trail.Query(ctx, audit.Query{AgentID: st.AgentID, Event: audit.EventAgentRegistered})
	if err != nil || len(registered.Records) != 1 {
		t.Errorf("registration records: %v %+v", err, registered)
	}

	c, err := newPageClient(p.url)
	if err != nil {
		t.Fatal(err)
	}
	activity, err := c.signIn("user_alice", "/activity")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`aria-current="page">Activity<`, "check_balance", "balance reader", "account_not_found", "registration approved: check_balance"} {
		if !strings.Contains(activity, s) {
			t.Errorf("the Activity page lacks %q", s)
		}
	}
}
