package storetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
)

// ConfirmFactory makes the stores under test.
type ConfirmFactory struct {
	// New returns an empty store, closed by the test's cleanup.
	New func(t *testing.T) confirm.Store
	// Reopen returns a second store client on the tokens of s, as
	// another instance would open it. For a store that cannot share
	// (MemoryStore) it returns s.
	Reopen func(t *testing.T, s confirm.Store) confirm.Store
}

// Confirm runs the suite of a confirm store.
func Confirm(t *testing.T, f ConfirmFactory) {
	t.Run("PutConsume", func(t *testing.T) { testPutConsume(t, f) })
	t.Run("NoMatchNoSpend", func(t *testing.T) { testNoMatch(t, f) })
	t.Run("ExpiryAndForgetting", func(t *testing.T) { confirmTestExpiry(t, f) })
	t.Run("Manager", func(t *testing.T) { testManager(t, f) })
	t.Run("ConcurrentTwoClients", func(t *testing.T) { confirmTestConcurrent(t, f) })
}

// ms keeps times to the millisecond, as stores do.
func ms(t time.Time) time.Time { return t.Truncate(time.Millisecond) }

func binding() confirm.Record {
	return confirm.Record{Subject: "agt_1", Capability: "transfer_money", Digest: "d1", Audience: "https://bank.example/"}
}

func testPutConsume(t *testing.T, f ConfirmFactory) {
	ctx := context.Background()
	s := f.New(t)
	now := ms(time.Now())
	rec := binding()
	rec.ExpiresAt = now.Add(time.Minute)
	if err := s.Put(ctx, "id1", rec, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	prev, ok, err := s.Consume(ctx, "id1", binding(), now)
	if err != nil || !ok {
		t.Fatalf("first consume: %v %v", ok, err)
	}
	if diff := cmp.Diff(&rec, prev); diff != "" {
		t.Errorf("record before consuming (-want +got):\n%s", diff)
	}
	prev, ok, err = s.Consume(ctx, "id1", binding(), now)
	if err != nil || ok || prev == nil || !prev.Used {
		t.Errorf("second consume: %+v %v %v", prev, ok, err)
	}
	if prev, ok, err := s.Consume(ctx, "unknown", binding(), now); prev != nil || ok || err != nil {
		t.Errorf("unknown id: %+v %v %v", prev, ok, err)
	}
}

func testNoMatch(t *testing.T, f ConfirmFactory) {
	ctx := context.Background()
	s := f.New(t)
	now := ms(time.Now())
	rec := binding()
	rec.ExpiresAt = now.Add(time.Minute)
	if err := s.Put(ctx, "id", rec, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, change := range []func(*confirm.Record){
		func(r *confirm.Record) { r.Subject = "agt_2" },
		func(r *confirm.Record) { r.Capability = "other" },
		func(r *confirm.Record) { r.Digest = "d2" },
		func(r *confirm.Record) { r.Audience = "https://elsewhere.example/" },
	} {
		want := binding()
		change(&want)
		prev, ok, err := s.Consume(ctx, "id", want, now)
		if err != nil || ok || prev == nil || prev.Used {
			t.Errorf("mismatched consume %+v: %+v %v %v", want, prev, ok, err)
		}
	}
	if _, ok, err := s.Consume(ctx, "id", binding(), now); !ok || err != nil {
		t.Errorf("the token was spent by a mismatch: %v %v", ok, err)
	}
}

func confirmTestExpiry(t *testing.T, f ConfirmFactory) {
	ctx := context.Background()
	s := f.New(t)
	now := ms(time.Now())
	rec := binding()
	rec.ExpiresAt = now.Add(-time.Second)
	if err := s.Put(ctx, "expired", rec, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	prev, ok, err := s.Consume(ctx, "expired", binding(), now)
	if err != nil || ok || prev == nil || prev.Used || !prev.ExpiresAt.Equal(rec.ExpiresAt) {
		t.Errorf("expired: %+v %v %v", prev, ok, err)
	}
	rec.ExpiresAt = now.Add(-2 * time.Second)
	if err := s.Put(ctx, "forgotten", rec, now.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if prev, ok, err := s.Consume(ctx, "forgotten", binding(), now); prev != nil || ok || err != nil {
		t.Errorf("forgotten: %+v %v %v", prev, ok, err)
	}
}

func testManager(t *testing.T, f ConfirmFactory) {
	ctx := context.Background()
	now := time.Now()
	clock := func() time.Time { return now }
	m, err := confirm.New(confirm.Config{Store: f.New(t), TTL: time.Minute, Retention: time.Hour, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	b := core.ConfirmationBinding{Subject: "agt_1", Capability: "transfer_money",
		Arguments: []byte(`{"amount":10,"to":"bob"}`), Audience: "https://bank.example/"}
	issue := func() core.Confirmation {
		t.Helper()
		c, err := m.Issue(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := issue()
	if c.ID != confirm.TokenID(c.Token) || !c.ExpiresAt.Equal(ms(now.Add(time.Minute))) {
		t.Errorf("issued %+v", c)
	}
	// The same call in another spelling is the same call.
	same := b
	same.Arguments = []byte(` {"to":"bob", "amount":1.0e1} `)
	other := b
	other.Arguments = []byte(`{"amount":11,"to":"bob"}`)
	stranger := b
	stranger.Subject = "agt_2"
	elsewhere := b
	elsewhere.Audience = "https://other.example/"
	otherCap := b
	otherCap.Capability = "close_account"
	for _, x := range []struct {
		name  string
		token string
		b     core.ConfirmationBinding
		want  error
	}{
		{"forged", "cfm_" + strings.Repeat("A", len(c.Token)-4), b, core.ErrConfirmationInvalid},
		{"not a token", "hello", b, core.ErrConfirmationInvalid},
		{"another subject", c.Token, stranger, core.ErrConfirmationInvalid},
		{"another audience", c.Token, elsewhere, core.ErrConfirmationInvalid},
		{"other arguments", c.Token, other, core.ErrConfirmationMismatch},
		{"another capability", c.Token, otherCap, core.ErrConfirmationMismatch},
		{"the call", c.Token, same, nil},
		{"again", c.Token, same, core.ErrConfirmationUsed},
		{"again by a stranger", c.Token, stranger, core.ErrConfirmationInvalid},
	} {
		if err := m.Consume(ctx, x.token, x.b); !errors.Is(err, x.want) || (x.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", x.name, err, x.want)
		}
	}
	late := issue()
	now = now.Add(time.Minute)
	if err := m.Consume(ctx, late.Token, b); !errors.Is(err, core.ErrConfirmationExpired) {
		t.Errorf("at expiry: %v", err)
	}
	now = now.Add(time.Hour)
	if err := m.Consume(ctx, late.Token, b); !errors.Is(err, core.ErrConfirmationInvalid) {
		t.Errorf("after retention: %v", err)
	}
}

// testConcurrent: 50 goroutines, half through each of two store clients
// sharing their tokens, consume one token; exactly one wins and every
// other is told the token was used.
func confirmTestConcurrent(t *testing.T, f ConfirmFactory) {
	s := f.New(t)
	stores := []confirm.Store{s, f.Reopen(t, s)}
	managers := make([]*confirm.Manager, 2)
	for i, st := range stores {
		m, err := confirm.New(confirm.Config{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		managers[i] = m
	}
	b := core.ConfirmationBinding{Subject: "agt_1", Capability: "transfer_money", Arguments: []byte(`{"amount":10}`)}
	c, err := managers[0].Issue(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	var wins, used atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 50 {
		wg.Go(func() {
			<-start
			err := managers[i%2].Consume(context.Background(), c.Token, b)
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, core.ErrConfirmationUsed):
				used.Add(1)
			default:
				t.Errorf("consumer %d: %v", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if wins.Load() != 1 || used.Load() != 49 {
		t.Errorf("%d consumers won and %d were told the token was used, want 1 and 49", wins.Load(), used.Load())
	}
}
