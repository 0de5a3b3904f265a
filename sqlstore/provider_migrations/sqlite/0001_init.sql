-- Agent Auth provider state. Times are microseconds since the Unix epoch,
-- UTC. Empty strings stand for absent text, except in unique columns,
-- where absence is NULL so that it never collides.

CREATE TABLE agentauth_hosts (
	id                   TEXT PRIMARY KEY,
	name                 TEXT NOT NULL DEFAULT '',
	public_key           TEXT,
	jwks_url             TEXT UNIQUE,
	thumbprint           TEXT NOT NULL UNIQUE,
	user_id              TEXT NOT NULL DEFAULT '',
	default_capabilities TEXT NOT NULL DEFAULT '[]',
	status               TEXT NOT NULL,
	activated_at         INTEGER,
	expires_at           INTEGER,
	last_used_at         INTEGER,
	created_at           INTEGER NOT NULL,
	updated_at           INTEGER NOT NULL
);
CREATE INDEX agentauth_hosts_status ON agentauth_hosts (status, created_at);

CREATE TABLE agentauth_agents (
	id           TEXT PRIMARY KEY,
	name         TEXT NOT NULL DEFAULT '',
	host_id      TEXT NOT NULL REFERENCES agentauth_hosts (id) ON DELETE CASCADE,
	user_id      TEXT NOT NULL DEFAULT '',
	mode         TEXT NOT NULL,
	status       TEXT NOT NULL,
	public_key   TEXT,
	jwks_url     TEXT NOT NULL DEFAULT '',
	kid          TEXT NOT NULL DEFAULT '',
	thumbprint   TEXT,
	last_used_at INTEGER,
	activated_at INTEGER,
	expires_at   INTEGER,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	UNIQUE (host_id, thumbprint)
);
CREATE INDEX agentauth_agents_host ON agentauth_agents (host_id, created_at);
CREATE INDEX agentauth_agents_status ON agentauth_agents (status, created_at);

CREATE TABLE agentauth_grants (
	agent_id    TEXT NOT NULL REFERENCES agentauth_agents (id) ON DELETE CASCADE,
	capability  TEXT NOT NULL,
	status      TEXT NOT NULL,
	constraints TEXT,
	granted_by  TEXT NOT NULL DEFAULT '',
	denied_by   TEXT NOT NULL DEFAULT '',
	reason      TEXT NOT NULL DEFAULT '',
	expires_at  INTEGER,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL,
	PRIMARY KEY (agent_id, capability)
);

CREATE TABLE agentauth_approvals (
	id               TEXT PRIMARY KEY,
	method           TEXT NOT NULL,
	agent_id         TEXT REFERENCES agentauth_agents (id) ON DELETE CASCADE,
	host_id          TEXT REFERENCES agentauth_hosts (id) ON DELETE CASCADE,
	user_id          TEXT NOT NULL DEFAULT '',
	capabilities     TEXT NOT NULL DEFAULT '[]',
	user_code_hash   TEXT UNIQUE,
	device_code_hash TEXT UNIQUE,
	status           TEXT NOT NULL,
	interval_ms      INTEGER NOT NULL DEFAULT 0,
	last_polled_at   INTEGER,
	expires_at       INTEGER NOT NULL,
	binding_message  TEXT NOT NULL DEFAULT '',
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL
);
CREATE INDEX agentauth_approvals_agent ON agentauth_approvals (agent_id, created_at);
CREATE INDEX agentauth_approvals_host ON agentauth_approvals (host_id);
CREATE INDEX agentauth_approvals_expiry ON agentauth_approvals (expires_at);
