package agentauth

import "github.com/agentcap/agentcap/core"

// AuditActor implements core.AuditPrincipal: the agent, its host and the
// user the agent acts for (the agent's user, else its host's), so that an
// executor's audit records name them without further configuration. A
// host JWT caller names its host only.
func (c Caller[P]) AuditActor() core.AuditActor {
	var a core.AuditActor
	if s := c.Session; s != nil {
		if s.Agent != nil {
			a.AgentID, a.HostID, a.UserID = s.Agent.ID, s.Agent.HostID, s.Agent.UserID
		}
		if s.Host != nil {
			a.HostID = s.Host.ID
			if a.UserID == "" {
				a.UserID = s.Host.UserID
			}
		}
	}
	if c.Host != nil && a.HostID == "" {
		a.HostID = c.Host.ID
	}
	return a
}
