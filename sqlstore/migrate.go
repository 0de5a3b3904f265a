package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"
)

// migrationsTable records the versions of the one schema applied to a
// database, one row per version.
const migrationsTable = "agentcap_store_migrations"

// The tables of the stores. They keep the names the per-feature packages
// gave them, so that a database those packages created is adopted as it
// is.
const (
	auditTable        = "agentcap_audit"
	confirmTable      = "agentcap_confirmations"
	idempotencyTable  = "agentcap_idempotency"
	jobsTable         = "agentcap_jobs"
	auditOldVersions  = auditTable + "_migrations"
	idemOldVersions   = idempotencyTable + "_migrations"
	providerVersions  = "agentauth_schema_migrations"
	postgresLockName  = "agentcap.store.schema"
	migrationsColumns = `(version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)`
)

// step is one version of the schema.
type step struct {
	// stmts are its statements in the dialect d.
	stmts func(d *dialect) []string
	// adopted, when set, reports whether a database already holds the
	// step, applied by a per-feature package that recorded its own
	// versions; the step is then recorded without running. Steps
	// without it are written so that running them on such a database
	// changes nothing (CREATE ... IF NOT EXISTS, the same shape).
	adopted func(ctx context.Context, tx *sql.Tx, d *dialect) (bool, error)
}

// steps is the one migration set, oldest first: steps[i] is version
// i+1. Versions are never changed once released; a change of schema is
// a new step at the end.
var steps = []step{
	// 1: confirmation tokens, as confirm's stores create them.
	{stmts: func(*dialect) []string { return confirmSchema }},
	// 2: idempotency keys, as idempotency's stores' version 1.
	{stmts: func(*dialect) []string { return idempotencyVersions[0] }},
	// 3: the scope of each key, idempotency's stores' version 2.
	{
		stmts:   func(*dialect) []string { return idempotencyVersions[1] },
		adopted: oldVersionAtLeast(idemOldVersions, 2),
	},
	// 4: jobs, as jobs' stores create them.
	{stmts: func(*dialect) []string { return jobsSchema }},
	// 5: the audit trail and its append-only trigger, audit's stores'
	// version 1.
	{
		stmts:   func(d *dialect) []string { return d.auditSchema },
		adopted: oldVersionAtLeast(auditOldVersions, 1),
	},
	// 6-10: the provider's records, the five versions of
	// agentauth/store's SQL stores, which recorded each version they
	// applied in agentauth_schema_migrations.
	providerStep(1, "0001_init.sql"),
	providerStep(2, "0002_user_views.sql"),
	providerStep(3, "0003_call_confirmations.sql"),
	providerStep(4, "0004_passkeys.sql"),
	providerStep(5, "0005_oauth_client.sql"),
	// 11: the audit trail keeps the indexes of its time order and of
	// each user's records only (see auditFilterIndexes).
	{stmts: func(*dialect) []string { return auditDropFilterIndexes }},
}

// firstProviderVersion is the version of the provider's first step.
const firstProviderVersion = 6

// providerStep runs the provider's migration file name, its version v,
// unless agentauth_schema_migrations records v (the old packages applied
// the versions they lacked, each recorded on its own).
func providerStep(v int, name string) step {
	return step{
		stmts: func(d *dialect) []string { return []string{providerSQL(d.providerDir, name)} },
		adopted: func(ctx context.Context, tx *sql.Tx, d *dialect) (bool, error) {
			exists, err := d.tableExists(ctx, tx, providerVersions)
			if err != nil || !exists {
				return false, err
			}
			var n int
			err = tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+providerVersions+` WHERE version = `+strconv.Itoa(v)).Scan(&n)
			return n > 0, err
		},
	}
}

// oldVersionAtLeast adopts a step when the versions table of a
// per-feature package records version v or a later one.
func oldVersionAtLeast(table string, v int64) func(context.Context, *sql.Tx, *dialect) (bool, error) {
	return func(ctx context.Context, tx *sql.Tx, d *dialect) (bool, error) {
		exists, err := d.tableExists(ctx, tx, table)
		if err != nil || !exists {
			return false, err
		}
		var have sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM `+table).Scan(&have); err != nil {
			return false, err
		}
		return have.Int64 >= v, nil
	}
}

// migrate brings the database up to date in one transaction, after the
// dialect's locks: the versions it lacks run (or are adopted) in order
// and are recorded. A database holding a version beyond steps was
// written by a newer program and is refused.
func migrate(ctx context.Context, db *sql.DB, d *dialect, now time.Time) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: migrating: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, lock := range d.locks {
		if err := lock(ctx, tx); err != nil {
			return fmt.Errorf("sqlstore: locking the schema: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+migrationsTable+` `+migrationsColumns); err != nil {
		return fmt.Errorf("sqlstore: migrating: %w", err)
	}
	var current sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM `+migrationsTable).Scan(&current); err != nil {
		return fmt.Errorf("sqlstore: migrating: %w", err)
	}
	if current.Int64 > int64(len(steps)) {
		return fmt.Errorf("sqlstore: the database has schema version %d, which this program does not know: it was written by a newer version", current.Int64)
	}
	for v := int(current.Int64) + 1; v <= len(steps); v++ {
		st := steps[v-1]
		skip := false
		if st.adopted != nil {
			if skip, err = st.adopted(ctx, tx, d); err != nil {
				return fmt.Errorf("sqlstore: migrating to version %d: %w", v, err)
			}
		}
		if !skip {
			for _, stmt := range st.stmts(d) {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("sqlstore: migrating to version %d: %w", v, err)
				}
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+migrationsTable+` (version, applied_at) VALUES (`+
			strconv.Itoa(v)+`, `+strconv.FormatInt(now.UnixMilli(), 10)+`)`); err != nil {
			return fmt.Errorf("sqlstore: migrating to version %d: %w", v, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: migrating: %w", err)
	}
	return nil
}
