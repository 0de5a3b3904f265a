package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentcap/agentcap/idempotency"
)

// resentClaims is a store whose client loses the answer to each claim
// and sends it again, as go-redis does after a connection drops between
// the server's write and its reply: the first claim is made, and the
// caller hears the second's answer.
type resentClaims struct {
	idempotency.Store
	sent int
}

func (s *resentClaims) Claim(ctx context.Context, scope, key, fingerprint, token string, lease time.Duration, max int) (bool, *idempotency.Record, error) {
	s.sent++
	if _, _, err := s.Store.Claim(ctx, scope, key, fingerprint, token, lease, max); err != nil {
		return false, nil, err
	}
	s.sent++
	return s.Store.Claim(ctx, scope, key, fingerprint, token, lease, max)
}

// A claim sent again after its answer was lost finds the key held by its
// own token: the call runs (rather than waiting for itself and being
// refused as in progress), and its answer is replayed to a repeat.
func TestBeginClaimSentTwice(t *testing.T) {
	store := &resentClaims{Store: idempotency.NewMemoryStore()}
	g, err := idempotency.New(idempotency.Config{Store: store, Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fp := idempotency.Fingerprint("transfer_money", []byte(`{"amount":10}`))
	claim, rec, err := g.Begin(ctx, "agt_1", "pay-1", fp)
	if err != nil || claim == nil || rec != nil {
		t.Fatalf("Begin = %v, %v, %v; want a claim", claim, rec, err)
	}
	if store.sent != 2 {
		t.Fatalf("the store was sent %d claims, want 2", store.sent)
	}
	if err := claim.Complete(ctx, 200, nil, []byte(`{"data":{"transfer_id":"tr_1"}}`)); err != nil {
		t.Fatal(err)
	}
	claim, rec, err = g.Begin(ctx, "agt_1", "pay-1", fp)
	if err != nil || claim != nil || rec == nil || string(rec.Body) != `{"data":{"transfer_id":"tr_1"}}` {
		t.Fatalf("repeat: Begin = %v, %+v, %v; want the stored answer", claim, rec, err)
	}

	// Another call's claim is still another's: a second key claimed by
	// one call and begun by another is in progress.
	first, _, err := g.Begin(ctx, "agt_1", "pay-2", fp)
	if err != nil || first == nil {
		t.Fatalf("Begin pay-2 = %v, %v", first, err)
	}
	if c, _, err := g.Begin(ctx, "agt_1", "pay-2", fp); !errors.Is(err, idempotency.ErrInProgress) || c != nil {
		t.Fatalf("a second call on a held key: %v, %v; want ErrInProgress", c, err)
	}
}
