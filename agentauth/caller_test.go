package agentauth_test

import (
	"testing"

	"github.com/agentcap/agentcap/agentauth"
)

func TestCallerForExecutionAndOwner(t *testing.T) {
	var anonymous agentauth.Caller[string]
	if anonymous.SessionOwner() != "" || anonymous.Executing() {
		t.Errorf("anonymous caller: owner %q, executing %v", anonymous.SessionOwner(), anonymous.Executing())
	}
	c := agentauth.Caller[string]{Session: &agentauth.Session{Agent: &agentauth.Agent{ID: "agt_1"}}, Principal: "alice"}
	e := c.ForExecution()
	if c.Executing() || !e.Executing() {
		t.Errorf("executing: original %v, copy %v", c.Executing(), e.Executing())
	}
	if e.SessionOwner() != "agent:agt_1" || e.Principal != "alice" {
		t.Errorf("copy: owner %q, principal %q", e.SessionOwner(), e.Principal)
	}
}
