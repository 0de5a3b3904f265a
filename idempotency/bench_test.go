package idempotency_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/agentcap/agentcap/idempotency"
)

const benchArgs = `{"source_account":"acc_123","destination_account":"acc_456","amount":250.75,"currency":"EUR"}`

func BenchmarkFingerprint(b *testing.B) {
	args := []byte(benchArgs)
	b.ReportAllocs()
	for range b.N {
		_ = idempotency.Fingerprint("transfer", args)
	}
}

// BenchmarkGuardMemory is what a first call with a new key adds: claim,
// then store the answer.
func BenchmarkGuardMemory(b *testing.B) {
	g, err := idempotency.New(idempotency.Config{})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, b.N)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	fp := idempotency.Fingerprint("transfer", []byte(benchArgs))
	answer := []byte(`{"data":{"transfer_id":"tr_1","status":"completed","amount":250.75,"currency":"EUR"}}` + "\n")
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		c, _, err := g.Begin(ctx, "agt_bench", keys[i], fp)
		if err != nil || c == nil {
			b.Fatal(err)
		}
		if err := c.Complete(ctx, 200, nil, answer); err != nil {
			b.Fatal(err)
		}
	}
}
