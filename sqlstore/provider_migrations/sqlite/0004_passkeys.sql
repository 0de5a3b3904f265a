-- Passkeys: the WebAuthn credentials users registered for the proof of
-- presence. id is the credential id, base64url; credential is the
-- credential as the WebAuthn library records it, JSON.
CREATE TABLE agentauth_passkeys (
	id           TEXT PRIMARY KEY,
	user_id      TEXT NOT NULL,
	user_handle  TEXT NOT NULL,
	name         TEXT NOT NULL DEFAULT '',
	credential   TEXT NOT NULL,
	created_at   INTEGER NOT NULL,
	last_used_at INTEGER
);
CREATE INDEX agentauth_passkeys_user ON agentauth_passkeys (user_id, created_at);

-- Values accepted once until they expire: the nonces of presence
-- challenges.
CREATE TABLE agentauth_nonces (
	nonce      TEXT PRIMARY KEY,
	expires_at INTEGER NOT NULL
);
CREATE INDEX agentauth_nonces_expiry ON agentauth_nonces (expires_at);
