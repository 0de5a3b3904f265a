package sqlitestore

import (
	"context"
	"database/sql"
)

// OnDB is Open on a handle the test opened (through a driver of its own),
// with the pool settings and migrations of Open; Close closes db.
func OnDB(ctx context.Context, db *sql.DB) (*Store, error) { return onDB(ctx, db) }

// DSN is the data source name Open opens path with.
func DSN(path string) (string, error) { return dsnOf(path) }
