package idempotency_test

import (
	"context"
	"fmt"

	"github.com/agentcap/agentcap/idempotency"
)

// The first call with a key runs and stores its answer; a retry gets the
// stored answer; the key with other arguments is refused.
func ExampleGuard_Begin() {
	g, err := idempotency.New(idempotency.Config{}) // keys in memory, kept 24 h
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	fp := idempotency.Fingerprint("transfer_money", []byte(`{"amount":10,"to":"acc_456"}`))
	claim, _, _ := g.Begin(ctx, "agt_1", "pay-1", fp)
	_ = claim.Complete(ctx, 200, nil, []byte(`{"data":{"transfer_id":"tr_1"}}`))

	// The same call, members in another order: the stored answer.
	again := idempotency.Fingerprint("transfer_money", []byte(`{"to":"acc_456","amount":10.0}`))
	c, rec, _ := g.Begin(ctx, "agt_1", "pay-1", again)
	fmt.Println(c == nil, rec.Status, string(rec.Body))

	other := idempotency.Fingerprint("transfer_money", []byte(`{"amount":11,"to":"acc_456"}`))
	_, _, err = g.Begin(ctx, "agt_1", "pay-1", other)
	fmt.Println(err)
	// Output:
	// true 200 {"data":{"transfer_id":"tr_1"}}
	// idempotency: the key was used for another call
}
