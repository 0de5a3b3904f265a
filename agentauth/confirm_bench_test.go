package agentauth_test

import (
	"context"
	"testing"

	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
)

// benchArguments are benchBody's arguments.
const benchArguments = `{"source_account":"acc_123","destination_account":"acc_456","amount":250.75,"currency":"EUR"}`

// BenchmarkVerifiedExecuteConfirmed is BenchmarkVerifiedExecute of a
// transfer that must be confirmed, through a confirm.Manager over the
// memory store: every request carries its own token in
// "confirmation_token". The tokens are issued before the timer (as a
// preview or a 428 answer issues them, in a request of their own), so the
// timed work is what confirming adds to the execute itself: the token
// member read from the body, the call's binding (the canonical digest of
// its arguments) and the token's consumption in the store.
func BenchmarkVerifiedExecuteConfirmed(b *testing.B) {
	const audience = "https://bank.example/"
	mgr, err := confirm.New(confirm.Config{})
	if err != nil {
		b.Fatal(err)
	}
	w := newBenchWorldConfirming(b, core.ConfirmationConfig{
		Confirmer: mgr,
		Audience:  audience,
		Rule:      func(*core.Definition) bool { return true },
	})
	bodies := make([][]byte, b.N)
	for i := range bodies {
		c, err := mgr.Issue(context.Background(), core.ConfirmationBinding{Subject: "agt_bench", Capability: "transfer",
			Arguments: []byte(benchArguments), Audience: audience})
		if err != nil {
			b.Fatal(err)
		}
		bodies[i] = []byte(`{"capability":"transfer","arguments":` + benchArguments + `,"confirmation_token":"` + c.Token + `"}`)
	}
	runVerified(b, w, nil, bodies)
}
