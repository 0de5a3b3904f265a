-- Approval requests that ask a person to confirm one call of an agent:
-- the call (capability, arguments, audience, preview) as JSON; NULL for
-- requests that grant capabilities.
ALTER TABLE agentauth_approvals ADD COLUMN call_request TEXT;
