-- The OAuth client a host stands for: its client_id when the provider
-- made the host for a user's consent to an OAuth client, '' for Agent
-- Auth hosts.
ALTER TABLE agentauth_hosts ADD COLUMN oauth_client TEXT NOT NULL DEFAULT '';
