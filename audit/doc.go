// Package audit keeps the audit trail of an agentcap application: one
// [Record] per capability call, preview and confirmation, and per change an
// Agent Auth provider makes to hosts, agents and grants.
//
// A [Sink] receives records. A [Store] is a Sink that can also be read back
// ([Store.Query], newest first, with filters and cursor pagination),
// exported as JSON Lines ([Export]) and trimmed ([Store.Sweep], see
// [Retention]). Stores are append-only: a record, once written, is never
// changed; only the retention sweep removes records, by age.
//
// Implementations: [Memory] (tests, single process), [NewSlogSink] (a log
// line per record, write only), and the SQL store of package sqlstore
// (SQLite or PostgreSQL, DB.Audit), which can share the database (and the
// *sql.DB or pool) of the provider store. Package storetest's Audit is
// the conformance suite every Store passes.
//
// A record identifies a call's arguments by the SHA-256 digest of their
// canonical form; Record.Arguments is meant only for arguments a writer
// has chosen to keep, with secret values replaced by [Redacted].
package audit
