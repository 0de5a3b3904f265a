package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MigrationsTable records the applied migrations. It carries the
// package's prefix because an application's own migration tool may
// already own a table named schema_migrations, with other columns.
const MigrationsTable = "agentauth_schema_migrations"

// Migration is one numbered SQL file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations reads the files NNNN_name.sql at the root of fsys, in
// version order. Versions must be positive and unique; any other file is
// an error, so that a misnamed migration is never skipped silently.
func Migrations(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("sqlstore: migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		num, rest, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if e.IsDir() || !ok || err != nil || v <= 0 || !strings.HasSuffix(rest, ".sql") {
			return nil, fmt.Errorf("sqlstore: migrations: %q is not named NNNN_name.sql", name)
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: migrations: %w", err)
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("sqlstore: migrations: %s and %s share version %d", out[i-1].Name, out[i].Name, out[i].Version)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("sqlstore: migrations: none found")
	}
	return out, nil
}

// Migrate applies the dialect's migrations that the database has not
// seen, all in one transaction: a failure leaves the schema as it was.
// Running it again applies nothing. A database that has a migration this
// program does not know was written by a newer version, and is refused.
func Migrate(ctx context.Context, db *sql.DB, d *Dialect) error {
	ms, err := Migrations(d.Migrations)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit it reports ErrTxDone
	if d.LockMigrations != nil {
		if err := d.LockMigrations(ctx, tx); err != nil {
			return fmt.Errorf("sqlstore: migrate: lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+MigrationsTable+` (
	version    BIGINT PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_at BIGINT NOT NULL
)`); err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT version FROM `+MigrationsTable)
	if err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	applied := make(map[int]bool)
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("sqlstore: migrate: %w", err)
		}
		applied[v] = true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	rows.Close()
	known := make(map[int]bool, len(ms))
	for _, m := range ms {
		known[m.Version] = true
	}
	for v := range applied {
		if !known[v] {
			return fmt.Errorf("sqlstore: migrate: the %s database has migration %d, which this program does not know: it was written by a newer version", d.Name, v)
		}
	}
	for _, m := range ms {
		if applied[m.Version] {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("sqlstore: migrate: %s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, d.rebind(`INSERT INTO `+MigrationsTable+` (version, name, applied_at) VALUES (?, ?, ?)`),
			m.Version, m.Name, time.Now().UnixMicro()); err != nil {
			return fmt.Errorf("sqlstore: migrate: %s: %w", m.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	return nil
}
