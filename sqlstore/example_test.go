package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/sqlstore"
)

// One SQLite file holds every store; each feature is handed its own.
func Example() {
	dir, err := os.MkdirTemp("", "agentcap")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, err := sqlstore.OpenSQLite(ctx, filepath.Join(dir, "agentcap.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()

	var trail audit.Store = db.Audit()
	if err := trail.Write(ctx, audit.Record{Event: audit.EventHostRegistered, Outcome: audit.OutcomeOK}); err != nil {
		panic(err)
	}
	page, err := trail.Query(ctx, audit.Query{})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(page.Records), "record")
	// Output: 1 record
}
