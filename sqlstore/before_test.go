package sqlstore_test

// What the per-feature packages that came before sqlstore
// (audit/pgstore, confirm/pgstore, idempotency/pgstore and jobs/pgstore)
// ran on a PostgreSQL database, recorded so that adopting their databases
// stays tested now that they are gone. Released schemas do not change:
// these statements are never edited. The SQLite counterpart is the file
// testdata/before-sqlstore.db, written by their SQLite siblings.

// beforeAuditPostgres is audit/pgstore's migration to its version 1.
var beforeAuditPostgres = []string{
	`CREATE TABLE IF NOT EXISTS agentcap_audit_migrations (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)`,
	`CREATE TABLE agentcap_audit (
	id TEXT PRIMARY KEY,
	at BIGINT NOT NULL,
	event TEXT NOT NULL,
	outcome TEXT NOT NULL,
	agent_id TEXT NOT NULL,
	host_id TEXT NOT NULL,
	user_id TEXT NOT NULL,
	capability TEXT NOT NULL,
	arguments_sha256 TEXT NOT NULL,
	confirmation_id TEXT NOT NULL,
	request_id TEXT NOT NULL,
	trace_id TEXT NOT NULL,
	client_ip TEXT NOT NULL,
	duration_ns BIGINT NOT NULL,
	detail TEXT NOT NULL,
	arguments TEXT
)`,
	`CREATE INDEX agentcap_audit_at ON agentcap_audit (at, id)`,
	`CREATE INDEX agentcap_audit_user ON agentcap_audit (user_id, at, id)`,
	`CREATE INDEX agentcap_audit_agent ON agentcap_audit (agent_id, at, id)`,
	`CREATE INDEX agentcap_audit_capability ON agentcap_audit (capability, at, id)`,
	`CREATE INDEX agentcap_audit_event ON agentcap_audit (event, at, id)`,
	`CREATE FUNCTION agentcap_audit_refuse_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'agentcap_audit is append-only';
END
$$`,
	`CREATE TRIGGER agentcap_audit_append_only BEFORE UPDATE ON agentcap_audit FOR EACH ROW EXECUTE FUNCTION agentcap_audit_refuse_update()`,
	`INSERT INTO agentcap_audit_migrations (version, applied_at) VALUES (1, 1767323045000)`,
}

// beforeConfirmPostgres is confirm/pgstore's schema.
var beforeConfirmPostgres = []string{
	`CREATE TABLE IF NOT EXISTS agentcap_confirmations (
	id TEXT PRIMARY KEY,
	subject TEXT NOT NULL,
	capability TEXT NOT NULL,
	digest TEXT NOT NULL,
	audience TEXT NOT NULL,
	expires_at BIGINT NOT NULL,
	forget_at BIGINT NOT NULL,
	used INTEGER NOT NULL
)`,
	`CREATE INDEX IF NOT EXISTS agentcap_confirmations_forget ON agentcap_confirmations (forget_at)`,
}

// beforeIdempotencyPostgres is idempotency/pgstore's migrations to its
// version 2.
var beforeIdempotencyPostgres = []string{
	`CREATE TABLE IF NOT EXISTS agentcap_idempotency_migrations (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS agentcap_idempotency (
	idem_key TEXT PRIMARY KEY,
	fingerprint TEXT NOT NULL,
	token TEXT NOT NULL,
	done INTEGER NOT NULL,
	status INTEGER NOT NULL,
	header TEXT,
	body TEXT,
	expires_at BIGINT NOT NULL
)`,
	`CREATE INDEX IF NOT EXISTS agentcap_idempotency_expires ON agentcap_idempotency (expires_at)`,
	`INSERT INTO agentcap_idempotency_migrations (version, applied_at) VALUES (1, 1767323045000)`,
	`ALTER TABLE agentcap_idempotency ADD COLUMN scope TEXT NOT NULL DEFAULT ''`,
	`CREATE INDEX IF NOT EXISTS agentcap_idempotency_scope ON agentcap_idempotency (scope, expires_at)`,
	`INSERT INTO agentcap_idempotency_migrations (version, applied_at) VALUES (2, 1767323045000)`,
}

// beforeJobsPostgres is jobs/pgstore's schema.
var beforeJobsPostgres = []string{
	`CREATE TABLE IF NOT EXISTS agentcap_jobs (
	id TEXT PRIMARY KEY,
	owner TEXT NOT NULL,
	capability TEXT NOT NULL,
	state TEXT NOT NULL,
	result TEXT,
	failure TEXT,
	progress TEXT,
	instance TEXT NOT NULL,
	lease_until BIGINT NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	expires_at BIGINT NOT NULL
)`,
	`CREATE INDEX IF NOT EXISTS agentcap_jobs_lease ON agentcap_jobs (state, lease_until)`,
	`CREATE INDEX IF NOT EXISTS agentcap_jobs_expires ON agentcap_jobs (expires_at)`,
	`CREATE INDEX IF NOT EXISTS agentcap_jobs_owner ON agentcap_jobs (owner, state)`,
}

// beforeJobsLock is the advisory lock jobs/pgstore took, in the
// transaction creating its schema.
const beforeJobsLock = `SELECT pg_advisory_xact_lock(hashtext('agentcap.jobs.schema.' || current_schema()))`

// beforeRows are one record of each store as the old stores wrote them
// (the records of testdata/before-sqlstore.db): an audit record of
// 2026-01-02T03:04:05Z, and a token, a key and a job that live until
// 2100.
var beforeRows = []string{
	`INSERT INTO agentcap_audit VALUES ('a1', 1767323045000000, 'call', 'ok', '', '', '', '', '', '', '', '', '', 0, '', NULL)`,
	`INSERT INTO agentcap_confirmations VALUES ('c1', 'u', 'cap', 'd', 'aud', 4102444800000, 4102444800000, 0)`,
	`INSERT INTO agentcap_idempotency (idem_key, fingerprint, token, done, status, header, body, expires_at, scope) VALUES ('k1', 'fp', 'tok', 0, 0, NULL, NULL, 4102444800000, 'scope')`,
	`INSERT INTO agentcap_jobs VALUES ('j1', 'o', 'cap', 'pending', NULL, NULL, NULL, 'i', 4102444800000, 1767323045000, 1767323045000, 4102444800000)`,
}
