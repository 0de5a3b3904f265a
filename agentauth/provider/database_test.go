package provider_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/sqlstore"
)

// Config.Database opens the provider's records of a sqlstore DB on the
// file, which Close closes.
func TestConfigDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "provider.db")
	reg := core.MustRegistry(core.MustDefine("ping", "Ping.",
		func(context.Context, struct{}, struct{}) (struct{}, error) { return struct{}{}, nil }))
	prov, err := provider.New(provider.Config{Issuer: "https://provider.example", ProviderName: "test", Database: path, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prov.Sweep(ctx); err != nil {
		t.Fatalf("Sweep on the opened store: %v", err)
	}
	if err := prov.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := prov.Sweep(ctx); err == nil {
		t.Error("Sweep after Close succeeded: the database is still open")
	}
	db, err := sqlstore.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Provider().GetHost(ctx, "none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the provider's records in the file: %v", err)
	}
}
