// Package idemtest is the conformance suite every idempotency.Store
// passes: claims, answers, releases, expiry, and 50 concurrent calls with
// one key through two stores sharing their keys, of which exactly one
// runs.
package idemtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/idempotency"
)

// Factory makes the stores under test.
type Factory struct {
	// New returns an empty store, closed by the test's cleanup.
	New func(t *testing.T) idempotency.Store
	// Reopen returns a second store on the keys of s, as another instance
	// would open it. For a store that cannot share (MemoryStore) it
	// returns s.
	Reopen func(t *testing.T, s idempotency.Store) idempotency.Store
}

// Run runs the suite.
func Run(t *testing.T, f Factory) {
	t.Run("ClaimCompleteReplay", func(t *testing.T) { testClaim(t, f) })
	t.Run("Release", func(t *testing.T) { testRelease(t, f) })
	t.Run("Expiry", func(t *testing.T) { testExpiry(t, f) })
	t.Run("ConcurrentTwoInstances", func(t *testing.T) { testConcurrent(t, f) })
	t.Run("GuardErrors", func(t *testing.T) { testGuardErrors(t, f) })
}

func testClaim(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	claimed, rec, err := s.Claim(ctx, "k1", "fp1", "tok1", time.Minute)
	if err != nil || !claimed || rec != nil {
		t.Fatalf("first claim: %v %+v %v", claimed, rec, err)
	}
	claimed, rec, err = s.Claim(ctx, "k1", "fp2", "tok2", time.Minute)
	if err != nil || claimed {
		t.Fatalf("second claim: %v %v", claimed, err)
	}
	if rec.Done || rec.Fingerprint != "fp1" || rec.Token != "tok1" {
		t.Errorf("in-progress record: %+v", rec)
	}
	// Only the holder completes.
	if err := s.Complete(ctx, "k1", "tok2", idempotency.Record{Status: 500}, time.Hour); err != nil {
		t.Fatal(err)
	}
	answer := idempotency.Record{Status: 202, Header: map[string]string{"Retry-After": "1"}, Body: []byte(`{"status":"pending"}` + "\n")}
	if err := s.Complete(ctx, "k1", "tok1", answer, time.Hour); err != nil {
		t.Fatal(err)
	}
	_, rec, err = s.Claim(ctx, "k1", "fp1", "tok3", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := &idempotency.Record{Fingerprint: "fp1", Token: "tok1", Done: true, Status: 202, Header: answer.Header, Body: answer.Body}
	if diff := cmp.Diff(want, rec); diff != "" {
		t.Errorf("stored answer (-want +got):\n%s", diff)
	}
	// A done key is not released.
	if err := s.Release(ctx, "k1", "tok1"); err != nil {
		t.Fatal(err)
	}
	if claimed, _, _ := s.Claim(ctx, "k1", "fp1", "tok4", time.Minute); claimed {
		t.Error("a released answer")
	}
}

func testRelease(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	if claimed, _, err := s.Claim(ctx, "k", "fp", "tok1", time.Minute); !claimed || err != nil {
		t.Fatal(claimed, err)
	}
	if err := s.Release(ctx, "k", "other"); err != nil {
		t.Fatal(err)
	}
	if claimed, _, _ := s.Claim(ctx, "k", "fp", "tok2", time.Minute); claimed {
		t.Error("released by a stranger")
	}
	if err := s.Release(ctx, "k", "tok1"); err != nil {
		t.Fatal(err)
	}
	if claimed, _, err := s.Claim(ctx, "k", "fp", "tok3", time.Minute); !claimed || err != nil {
		t.Errorf("after release: %v %v", claimed, err)
	}
}

func testExpiry(t *testing.T, f Factory) {
	ctx := context.Background()
	s := f.New(t)
	if claimed, _, _ := s.Claim(ctx, "lease", "fp", "tok1", 50*time.Millisecond); !claimed {
		t.Fatal("not claimed")
	}
	if claimed, _, _ := s.Claim(ctx, "ttl", "fp", "tok1", time.Minute); !claimed {
		t.Fatal("not claimed")
	}
	if err := s.Complete(ctx, "ttl", "tok1", idempotency.Record{Status: 200, Body: []byte("{}")}, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(120 * time.Millisecond)
	for _, k := range []string{"lease", "ttl"} {
		if claimed, rec, err := s.Claim(ctx, k, "fp2", "tok2", time.Minute); !claimed || err != nil {
			t.Errorf("%s after expiry: %v %+v %v", k, claimed, rec, err)
		}
	}
	// The expired holder cannot complete over the new claim.
	if err := s.Complete(ctx, "lease", "tok1", idempotency.Record{Status: 200}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, rec, _ := s.Claim(ctx, "lease", "fp2", "tok3", time.Minute); rec == nil || rec.Done || rec.Token != "tok2" {
		t.Errorf("after a stale completion: %+v", rec)
	}
}

// testConcurrent: 50 identical calls with one key, half through each of
// two stores sharing their keys, run the handler exactly once; every
// call gets the one answer.
func testConcurrent(t *testing.T, f Factory) {
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

func testGuardErrors(t *testing.T, f Factory) {
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
