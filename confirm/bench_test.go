package confirm_test

import (
	"context"
	"testing"

	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/internal/benchcpu"
)

var benchBinding = core.ConfirmationBinding{Subject: "agt_bench", Capability: "transfer",
	Arguments: []byte(`{"source_account":"acc_123","destination_account":"acc_456","amount":250.75,"currency":"EUR"}`),
	Audience:  "https://bank.example/"}

// BenchmarkIssue issues a token through the memory store: what a preview
// or a 428 answer adds.
func BenchmarkIssue(b *testing.B) {
	m, err := confirm.New(confirm.Config{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	defer benchcpu.Report(b)()
	for b.Loop() {
		if _, err := m.Issue(ctx, benchBinding); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConsume consumes tokens issued before the timer through the
// memory store: what a confirmed execute adds, the binding's digest
// included.
func BenchmarkConsume(b *testing.B) {
	m, err := confirm.New(confirm.Config{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	tokens := make([]string, b.N)
	for i := range tokens {
		c, err := m.Issue(ctx, benchBinding)
		if err != nil {
			b.Fatal(err)
		}
		tokens[i] = c.Token
	}
	b.ReportAllocs()
	b.ResetTimer()
	defer benchcpu.Report(b)()
	for i := range b.N {
		if err := m.Consume(ctx, tokens[i], benchBinding); err != nil {
			b.Fatal(err)
		}
	}
}
