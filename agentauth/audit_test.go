package agentauth_test

import (
	"testing"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/core"
)

func TestCallerAuditActor(t *testing.T) {
	var _ core.AuditPrincipal = agentauth.Caller[struct{}]{}
	tests := []struct {
		name   string
		caller agentauth.Caller[struct{}]
		want   core.AuditActor
	}{
		{"nobody", agentauth.Caller[struct{}]{}, core.AuditActor{}},
		{"delegated agent", agentauth.Caller[struct{}]{Session: &agentauth.Session{
			Agent: &agentauth.Agent{ID: "agt_1", HostID: "hst_1", UserID: "usr_a"},
			Host:  &agentauth.Host{ID: "hst_1", UserID: "usr_h"}}},
			core.AuditActor{AgentID: "agt_1", HostID: "hst_1", UserID: "usr_a"}},
		{"the host's user", agentauth.Caller[struct{}]{Session: &agentauth.Session{
			Agent: &agentauth.Agent{ID: "agt_1", HostID: "hst_1"},
			Host:  &agentauth.Host{ID: "hst_1", UserID: "usr_h"}}},
			core.AuditActor{AgentID: "agt_1", HostID: "hst_1", UserID: "usr_h"}},
		{"host JWT caller", agentauth.Caller[struct{}]{Host: &agentauth.Host{ID: "hst_2", UserID: "usr_h"}},
			core.AuditActor{HostID: "hst_2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.caller.AuditActor(); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
