package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/idempotency"
)

// IdempotencyFactory makes the stores under test.
type IdempotencyFactory struct {
	// New returns an empty store, closed by the test's cleanup.
	New func(t *testing.T) idempotency.Store
	// Reopen returns a second store on the keys of s, as another instance
	// would open it. For a store that cannot share (MemoryStore) it
	// returns s.
	Reopen func(t *testing.T, s idempotency.Store) idempotency.Store
}

// Idempotency runs the suite of a idempotency store.
func Idempotency(t *testing.T, f IdempotencyFactory) {
	t.Run("ClaimCompleteReplay", func(t *testing.T) { testClaim(t, f) })
	t.Run("Release", func(t *testing.T) { testRelease(t, f) })
	t.Run("Expiry", func(t *testing.T) { idempotencyTestExpiry(t, f) })
	t.Run("ConcurrentTwoInstances", func(t *testing.T) { idempotencyTestConcurrent(t, f) })
	t.Run("GuardErrors", func(t *testing.T) { testGuardErrors(t, f) })
	t.Run("BoundedScope", func(t *testing.T) { testBoundedScope(t, f) })
	t.Run("AnswerBound", func(t *testing.T) { testAnswerBound(t, f) })
}

func testClaim(t *testing.T, f IdempotencyFactory) {
	ctx := context.Background()
	s := f.New(t)
	claimed, rec, err := s.Claim(ctx, "agt_1", "k1", "fp1", "tok1", time.Minute, 0)
	if err != nil || !claimed || rec != nil {
		t.Fatalf("first claim: %v %+v %v", claimed, rec, err)
	}
	claimed, rec, err = s.Claim(ctx, "agt_1", "k1", "fp2", "tok2", time.Minute, 0)
	if err != nil || claimed {
		t.Fatalf("second claim: %v %v", claimed, err)
	}
	if rec.Done || rec.Fingerprint != "fp1" || rec.Token != "tok1" {
		t.Errorf("in-progress record: %+v", rec)
	}
	// Only the holder completes.
	if err := s.Complete(ctx, "agt_1", "k1", "tok2", idempotency.Record{Status: 500}, time.Hour); err != nil {
		t.Fatal(err)
	}
	answer := idempotency.Record{Status: 202, Header: map[string]string{"Retry-After": "1"}, Body: []byte(`{"status":"pending"}` + "\n")}
	if err := s.Complete(ctx, "agt_1", "k1", "tok1", answer, time.Hour); err != nil {
		t.Fatal(err)
	}
	_, rec, err = s.Claim(ctx, "agt_1", "k1", "fp1", "tok3", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := &idempotency.Record{Fingerprint: "fp1", Token: "tok1", Done: true, Status: 202, Header: answer.Header, Body: answer.Body}
	if diff := cmp.Diff(want, rec); diff != "" {
		t.Errorf("stored answer (-want +got):\n%s", diff)
	}
	// A done key is not released.
	if err := s.Release(ctx, "agt_1", "k1", "tok1"); err != nil {
		t.Fatal(err)
	}
	if claimed, _, _ := s.Claim(ctx, "agt_1", "k1", "fp1", "tok4", time.Minute, 0); claimed {
		t.Error("a released answer")
	}
}

func testRelease(t *testing.T, f IdempotencyFactory) {
	ctx := context.Background()
	s := f.New(t)
	if claimed, _, err := s.Claim(ctx, "agt_1", "k", "fp", "tok1", time.Minute, 0); !claimed || err != nil {
		t.Fatal(claimed, err)
	}
	if err := s.Release(ctx, "agt_1", "k", "other"); err != nil {
		t.Fatal(err)
	}
	if claimed, _, _ := s.Claim(ctx, "agt_1", "k", "fp", "tok2", time.Minute, 0); claimed {
		t.Error("released by a stranger")
	}
	if err := s.Release(ctx, "agt_1", "k", "tok1"); err != nil {
		t.Fatal(err)
	}
	if claimed, _, err := s.Claim(ctx, "agt_1", "k", "fp", "tok3", time.Minute, 0); !claimed || err != nil {
		t.Errorf("after release: %v %v", claimed, err)
	}
}

func idempotencyTestExpiry(t *testing.T, f IdempotencyFactory) {
	ctx := context.Background()
	s := f.New(t)
	if claimed, _, _ := s.Claim(ctx, "agt_1", "lease", "fp", "tok1", 50*time.Millisecond, 0); !claimed {
		t.Fatal("not claimed")
	}
	if claimed, _, _ := s.Claim(ctx, "agt_1", "ttl", "fp", "tok1", time.Minute, 0); !claimed {
		t.Fatal("not claimed")
	}
	if err := s.Complete(ctx, "agt_1", "ttl", "tok1", idempotency.Record{Status: 200, Body: []byte("{}")}, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(120 * time.Millisecond)
	for _, k := range []string{"lease", "ttl"} {
		if claimed, rec, err := s.Claim(ctx, "agt_1", k, "fp2", "tok2", time.Minute, 0); !claimed || err != nil {
			t.Errorf("%s after expiry: %v %+v %v", k, claimed, rec, err)
		}
	}
	// The expired holder cannot complete over the new claim.
	if err := s.Complete(ctx, "agt_1", "lease", "tok1", idempotency.Record{Status: 200}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, rec, _ := s.Claim(ctx, "agt_1", "lease", "fp2", "tok3", time.Minute, 0); rec == nil || rec.Done || rec.Token != "tok2" {
		t.Errorf("after a stale completion: %+v", rec)
	}
}

// testConcurrent: 50 identical calls with one key, half through each of
// two stores sharing their keys, run the handler exactly once; every
// call gets the one answer.
func idempotencyTestConcurrent(t *testing.T, f IdempotencyFactory) {
	s := f.New(t)
	stores := []idempotency.Store{s, f.Reopen(t, s)}
	guards := make([]*idempotency.Guard, 2)
	for i, st := range stores {
		g, err := idempotency.New(idempotency.Config{Store: st, Wait: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		guards[i] = g
	}
	fp := idempotency.Fingerprint("transfer_money", []byte(`{"amount":10}`))
	var runs atomic.Int32
	bodies := make([]string, 50)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			ctx := context.Background()
			claim, rec, err := guards[i%2].Begin(ctx, "agt_1", "key-1", fp)
			if err != nil {
				t.Errorf("call %d: %v", i, err)
				return
			}
			if claim != nil {
				n := runs.Add(1)
				time.Sleep(50 * time.Millisecond)
				body := fmt.Sprintf(`{"data":{"run":%d}}`, n)
				if err := claim.Complete(ctx, 200, nil, []byte(body)); err != nil {
					t.Error(err)
				}
				bodies[i] = body
				return
			}
			bodies[i] = string(rec.Body)
		})
	}
	wg.Wait()
	if runs.Load() != 1 {
		t.Fatalf("the handler ran %d times, want once", runs.Load())
	}
	for i, b := range bodies {
		if b != `{"data":{"run":1}}` {
			t.Errorf("call %d got %q", i, b)
		}
	}
}

func testGuardErrors(t *testing.T, f IdempotencyFactory) {
	ctx := context.Background()
	s := f.New(t)
	g, err := idempotency.New(idempotency.Config{Store: s, Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	fp1 := idempotency.Fingerprint("c", []byte(`{"a":1}`))
	fp2 := idempotency.Fingerprint("c", []byte(`{"a":2}`))
	claim, _, err := g.Begin(ctx, "agt_1", "k", fp1)
	if err != nil || claim == nil {
		t.Fatal(err)
	}
	if _, _, err := g.Begin(ctx, "agt_1", "k", fp1); !errors.Is(err, idempotency.ErrInProgress) {
		t.Errorf("repeat while running: %v", err)
	}
	if _, _, err := g.Begin(ctx, "agt_1", "k", fp2); !errors.Is(err, idempotency.ErrKeyReused) {
		t.Errorf("other arguments: %v", err)
	}
	// Another caller's key of the same name is its own.
	if other, _, err := g.Begin(ctx, "agt_2", "k", fp2); err != nil || other == nil {
		t.Errorf("another scope: %v", err)
	}
	if err := claim.Complete(ctx, 200, nil, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if c, rec, err := g.Begin(ctx, "agt_1", "k", fp1); err != nil || c != nil || rec == nil || string(rec.Body) != "{}" {
		t.Errorf("replay: %v %v %+v", c, err, rec)
	}
	for _, bad := range []string{"", "with space", "é", string(make([]byte, idempotency.MaxKeyLength+1))} {
		if _, _, err := g.Begin(ctx, "agt_1", bad, fp1); !errors.Is(err, idempotency.ErrInvalidKey) {
			t.Errorf("key %q: %v", bad, err)
		}
	}
}

// testBoundedScope: a scope holding Config.MaxKeysPerScope live keys
// (claimed or answered) gets ErrTooManyKeys for a new key, through any
// store sharing the keys, while its held keys are still answered and
// other scopes are not refused; a released or expired key frees its place.
func testBoundedScope(t *testing.T, f IdempotencyFactory) {
	ctx := context.Background()
	s := f.New(t)
	guards := make([]*idempotency.Guard, 2)
	for i, st := range []idempotency.Store{s, f.Reopen(t, s)} {
		g, err := idempotency.New(idempotency.Config{Store: st, Wait: -1, MaxKeysPerScope: 3})
		if err != nil {
			t.Fatal(err)
		}
		guards[i] = g
	}
	fp := idempotency.Fingerprint("c", nil)
	begin := func(g int, scope, key string) (*idempotency.Claim, *idempotency.Record, error) {
		return guards[g].Begin(ctx, scope, key, fp)
	}
	done, _, err := begin(0, "agt_1", "k1")
	if err != nil || done == nil {
		t.Fatalf("k1: %v", err)
	}
	if err := done.Complete(ctx, 200, nil, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if c, _, err := begin(1, "agt_1", "k2"); err != nil || c == nil {
		t.Fatalf("k2: %v", err)
	}
	running, _, err := begin(0, "agt_1", "k3")
	if err != nil || running == nil {
		t.Fatalf("k3: %v", err)
	}
	for g := range 2 {
		if _, _, err := begin(g, "agt_1", "k4"); !errors.Is(err, idempotency.ErrTooManyKeys) {
			t.Fatalf("a fourth key through store %d: %v; want ErrTooManyKeys", g, err)
		}
	}
	// A held key is still answered, and other scopes have their own.
	if c, rec, err := begin(1, "agt_1", "k1"); err != nil || c != nil || rec == nil || string(rec.Body) != "{}" {
		t.Fatalf("replay of k1 at the bound: %v %+v %v", c, rec, err)
	}
	if c, _, err := begin(1, "agt_2", "k4"); err != nil || c == nil {
		t.Fatalf("another scope: %v", err)
	}
	// A released key frees its place.
	if err := running.Release(ctx); err != nil {
		t.Fatal(err)
	}
	short, _, err := begin(1, "agt_1", "k4")
	if err != nil || short == nil {
		t.Fatalf("k4 after a release: %v", err)
	}
	// So does an expired one.
	g, err := idempotency.New(idempotency.Config{Store: s, Wait: -1, MaxKeysPerScope: 1, TTL: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := g.Begin(ctx, "agt_3", "a", fp)
	if err != nil || c == nil {
		t.Fatalf("agt_3: %v", err)
	}
	if err := c.Complete(ctx, 200, nil, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Begin(ctx, "agt_3", "b", fp); !errors.Is(err, idempotency.ErrTooManyKeys) {
		t.Fatalf("agt_3's second key: %v; want ErrTooManyKeys", err)
	}
	time.Sleep(120 * time.Millisecond)
	if c, _, err := g.Begin(ctx, "agt_3", "b", fp); err != nil || c == nil {
		t.Fatalf("agt_3's second key once the first expired: %v", err)
	}
}

// testAnswerBound: an answer longer than Config.MaxAnswerBytes (raised to
// MinAnswerBytes) is not stored; the claim still holds the key for a
// shorter one.
func testAnswerBound(t *testing.T, f IdempotencyFactory) {
	ctx := context.Background()
	g, err := idempotency.New(idempotency.Config{Store: f.New(t), Wait: -1, MaxAnswerBytes: 10})
	if err != nil {
		t.Fatal(err)
	}
	fp := idempotency.Fingerprint("c", nil)
	c, _, err := g.Begin(ctx, "agt_1", "k", fp)
	if err != nil || c == nil {
		t.Fatal(err)
	}
	if err := c.Complete(ctx, 200, nil, []byte(strings.Repeat("x", idempotency.MinAnswerBytes+1))); !errors.Is(err, idempotency.ErrAnswerTooLarge) {
		t.Fatalf("an answer of MinAnswerBytes+1: %v; want ErrAnswerTooLarge", err)
	}
	if _, _, err := g.Begin(ctx, "agt_1", "k", fp); !errors.Is(err, idempotency.ErrInProgress) {
		t.Fatalf("repeat after a refused answer: %v; want the key still claimed", err)
	}
	if err := c.Complete(ctx, 409, nil, []byte(strings.Repeat("y", idempotency.MinAnswerBytes))); err != nil {
		t.Fatal(err)
	}
	if _, rec, err := g.Begin(ctx, "agt_1", "k", fp); err != nil || rec == nil || rec.Status != 409 {
		t.Fatalf("the shorter answer: %+v %v", rec, err)
	}
}
