-- The signed-in user's own views: hosts linked to them, agents acting
-- for them, approval requests waiting for them.
CREATE INDEX agentauth_hosts_user ON agentauth_hosts (user_id);
CREATE INDEX agentauth_agents_user ON agentauth_agents (user_id, created_at);
CREATE INDEX agentauth_approvals_user ON agentauth_approvals (user_id, status);
