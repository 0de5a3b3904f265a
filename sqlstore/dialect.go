package sqlstore

import (
	"context"
	"database/sql"

	"github.com/agentcap/agentcap/internal/sqlutil"
)

// dialect is what differs between SQLite and PostgreSQL.
type dialect struct {
	name string
	// numbered placeholders ($1) instead of ?.
	numbered bool
	// prepare keeps statements prepared (SQLite parses every text
	// again; pgx caches statements itself).
	prepare bool
	// groupCommit has the audit store write concurrent records in one
	// transaction: SQLite has a single writer, and a commit on
	// PostgreSQL is a round trip of its own.
	groupCommit bool
	// groupInsert writes a group of audit records with one INSERT of
	// several rows, one round trip, instead of one INSERT each in a
	// transaction (for a database over the network).
	groupInsert bool
	// locks run first in the migrating transaction.
	locks []func(context.Context, *sql.Tx) error
	// auditSchema creates the audit table, its indexes and the trigger
	// that refuses updates.
	auditSchema []string
	isUnique    func(error) bool
	// tableExists reports whether the current schema holds table.
	tableExistsQuery string
	// provider is the dialect of the provider's records, and
	// providerDir the directory of its migration files.
	provider    *providerDialect
	providerDir string
}

func (d *dialect) tableExists(ctx context.Context, tx *sql.Tx, table string) (bool, error) {
	var n int
	if err := tx.QueryRowContext(ctx, d.tableExistsQuery, table).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}

// q numbers the placeholders of query for dialects that want $1, $2, ...
func (d *dialect) q(query string) string {
	if !d.numbered {
		return query
	}
	return sqlutil.Number(query)
}

var sqliteDialect = &dialect{
	name:        "sqlite",
	prepare:     true,
	groupCommit: true,
	auditSchema: append(append([]string{}, auditCreateTable...),
		`CREATE TRIGGER `+auditTable+`_append_only BEFORE UPDATE ON `+auditTable+` BEGIN SELECT RAISE(ABORT, '`+auditTable+` is append-only'); END`),
	isUnique:         sqliteProvider.IsUnique,
	tableExistsQuery: `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`,
	provider:         sqliteProvider,
	providerDir:      "sqlite",
}

var postgresDialect = &dialect{
	name:     "postgres",
	numbered: true,
	// The new lock, then those of the per-feature packages, so that an
	// instance still running one of them, starting at the same moment,
	// does not create a table this migration creates too.
	locks: []func(context.Context, *sql.Tx) error{
		sqlutil.PostgresLock(postgresLockName),
		sqlutil.PostgresLock("agentcap.confirm.schema"),
		sqlutil.PostgresLock("agentcap.idempotency.schema"),
		sqlutil.PostgresLock("agentcap.jobs.schema"),
		sqlutil.PostgresLock("agentcap.audit.schema"),
		// agentauth/store/pgstore's.
		sqlutil.PostgresLock("agentcap.agentauth.migrate"),
	},
	auditSchema: append(append([]string{}, auditCreateTable...),
		`CREATE FUNCTION `+auditTable+`_refuse_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION '`+auditTable+` is append-only';
END
$$`,
		`CREATE TRIGGER `+auditTable+`_append_only BEFORE UPDATE ON `+auditTable+` FOR EACH ROW EXECUTE FUNCTION `+auditTable+`_refuse_update()`),
	groupCommit:      true,
	groupInsert:      true,
	isUnique:         postgresProvider.IsUnique,
	tableExistsQuery: `SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1`,
	provider:         postgresProvider,
	providerDir:      "postgres",
}
