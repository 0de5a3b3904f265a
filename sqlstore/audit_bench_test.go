package sqlstore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/sqlstore"
)

// BenchmarkWrite measures the record of one execution written to the
// trail in SQLite, as the executor writes one for every call.
func BenchmarkWrite(b *testing.B) {
	s, r := benchStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Write(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteParallel is BenchmarkWrite from 16 goroutines at once,
// as a busy location writes the records of its calls.
func BenchmarkWriteParallel(b *testing.B) {
	s, r := benchStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.Write(ctx, r); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// benchStore is a new store, and the record of an execution to write.
func benchStore(b *testing.B) (audit.Store, audit.Record) {
	db, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "agentcap.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return db.Audit(), audit.Record{Event: "execution", Outcome: "ok", AgentID: "agt_1", HostID: "hst_1", UserID: "usr_1",
		Capability: "check_balance", RequestID: "req_1", ClientIP: "127.0.0.1", Duration: time.Millisecond,
		Arguments: []byte(`{"account_id":"acc_1"}`)}
}
