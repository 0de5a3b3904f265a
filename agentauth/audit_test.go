package agentauth_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// auditRecords keeps an executor's audit records.
type auditRecords struct {
	mu      sync.Mutex
	records []core.AuditRecord
}

func (a *auditRecords) WriteAudit(_ context.Context, r core.AuditRecord) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.records = append(a.records, r)
	return nil
}

// An executor's audit records name the agent, its host and the user the
// agent acts for (the agent's own user, else its host's; none for an
// autonomous agent) from the identity New builds, without further
// configuration; a host JWT caller, refused, is recorded as its host and
// linked user.
func TestAuditRecordsNameTheIdentity(t *testing.T) {
	w := newLCWorld(t)
	v := w.location(t, agentauth.Config{})
	var trail auditRecords
	exec, err := core.NewExecutor(core.MustRegistry(htPay, htPublic), htContext, core.Config{Audit: core.AuditConfig{Writer: &trail}})
	if err != nil {
		t.Fatal(err)
	}
	type actor struct {
		Capability, Outcome, AgentID, HostID, UserID string
	}
	tests := []struct {
		name       string
		token      string
		discovery  bool
		capability string
		want       actor
	}{
		{"agent with a user of its own", w.own.Token(agentauthtest.Token{Audience: htAudience}), false, "pay",
			actor{"pay", "ok", "agt_own", "hst_alice", "user_bob"}},
		{"agent acting for its host's user", w.hostsUser.Token(agentauthtest.Token{Audience: htAudience}), false, "pay",
			actor{"pay", "ok", "agt_hosts_user", "hst_alice", "user_alice"}},
		{"autonomous agent", w.autonomous.Token(agentauthtest.Token{Audience: htAudience}), false, "pay",
			actor{"pay", "ok", "agt_autonomous", "hst_alice", ""}},
		{"host JWT caller", w.alice.Token(agentauthtest.Token{Audience: htIssuer}), true, "public_info",
			actor{"public_info", string(agentcap.CodeAuthenticationRequired), "", "hst_alice", "user_alice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := verify(v, tt.token, tt.discovery)
			if err != nil {
				t.Fatal(err)
			}
			trail.mu.Lock()
			trail.records = nil
			trail.mu.Unlock()
			var args []byte
			if tt.capability == "pay" {
				args = []byte(`{"to":"bob","amount":1}`)
			}
			_, _ = exec.Execute(context.Background(), tt.capability, id, args)
			trail.mu.Lock()
			defer trail.mu.Unlock()
			var got []actor
			for _, r := range trail.records {
				got = append(got, actor{r.Capability, r.Outcome, r.AgentID, r.HostID, r.UserID})
			}
			if diff := cmp.Diff([]actor{tt.want}, got); diff != "" {
				t.Errorf("audit records (-want +got):\n%s", diff)
			}
		})
	}
}
