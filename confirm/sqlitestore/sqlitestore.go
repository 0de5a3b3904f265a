// Package sqlitestore keeps confirmation tokens (package confirm) in an
// SQLite file, shared by the processes of one machine and kept across
// restarts. Forgotten tokens are ignored; Sweep deletes them.
package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/agentcap/agentcap/confirm"
	sqlstore "github.com/agentcap/agentcap/internal/sqlstores/confirmsql"
	"github.com/agentcap/agentcap/internal/sqlutil"
)

// Table is the name of the table holding the tokens.
const Table = "agentcap_confirmations"

// Store is a confirm.Store in SQLite.
type Store struct {
	*sqlstore.Store
}

var _ confirm.Store = (*Store)(nil)

// Open opens (creating if needed) the SQLite file at path, which may be
// the file an application already uses for other tables. Close closes it.
func Open(ctx context.Context, path string) (*Store, error) {
	dsn, err := sqlutil.SQLiteDSN(path)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	sqlutil.SQLitePool(db)
	s, err := sqlstore.Open(ctx, db, &sqlstore.Dialect{Table: Table}, db.Close)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Store{Store: s}, nil
}
