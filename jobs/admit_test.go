package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcap/agentcap/jobs"
)

// blocked starts a call of owner that runs until release is closed.
func blocked(m *jobs.Manager, owner string, release <-chan struct{}) *jobs.Call {
	return m.Call(context.Background(), owner, "export", func(ctx context.Context) (json.RawMessage, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return json.RawMessage(`{}`), nil
	})
}

// Calls that are running but not yet recorded as jobs (still attached
// to their request) count against the owner's bounds, once: a detached
// call is counted by the store alone, an attached call that ends is no
// longer counted.
func TestAdmitCountsCallsNotYetRecorded(t *testing.T) {
	ctx := context.Background()
	m := manager(t, jobs.Config{MaxPendingPerOwner: 2})
	release := make(chan struct{})
	defer close(release)
	admit := func() error {
		t.Helper()
		return m.Admit(ctx, "agt_1")
	}
	if err := admit(); err != nil {
		t.Fatal(err)
	}
	attached := blocked(m, "agt_1", release)
	if err := admit(); err != nil {
		t.Fatal(err)
	}
	detached := blocked(m, "agt_1", release)
	if _, err := detached.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	if err := admit(); !errors.Is(err, jobs.ErrTooManyJobs) {
		t.Fatalf("a third call while one is attached and one detached: %v; want ErrTooManyJobs", err)
	}
	if err := m.Admit(ctx, "agt_2"); err != nil {
		t.Fatalf("another owner: %v", err)
	}
	// The attached call ends without becoming a job: its place is free.
	quick := make(chan struct{})
	close(quick)
	ended := blocked(m, "agt_3", quick)
	<-ended.Done()
	attached.Cancel()
	<-attached.Done()
	if err := admit(); err != nil {
		t.Fatalf("after the attached call ended: %v", err)
	}
}

// Admits of one owner at the same moment, before any of them starts its
// call, cannot pass a bound together: each holds its place for the call
// that follows it, and a place nobody takes is given back after a while.
func TestAdmitBurst(t *testing.T) {
	ctx := context.Background()
	var clock atomic.Int64
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := func() time.Time { return base.Add(time.Duration(clock.Load())) }
	m := manager(t, jobs.Config{MaxPendingPerOwner: 3, MaxPerOwner: 5, Now: now})
	var granted atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			switch err := m.Admit(ctx, "agt_1"); {
			case err == nil:
				granted.Add(1)
			case !errors.Is(err, jobs.ErrTooManyJobs):
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := granted.Load(); got != 3 {
		t.Fatalf("%d of 20 admitted at once; want 3 (MaxPendingPerOwner)", got)
	}
	// A call takes a granted place rather than adding to it.
	release := make(chan struct{})
	defer close(release)
	blocked(m, "agt_1", release)
	if err := m.Admit(ctx, "agt_1"); !errors.Is(err, jobs.ErrTooManyJobs) {
		t.Fatalf("a fourth admit: %v; want ErrTooManyJobs", err)
	}
	// The two places no call took are given back.
	clock.Store(int64(time.Minute))
	for i := range 2 {
		if err := m.Admit(ctx, "agt_1"); err != nil {
			t.Fatalf("admit %d after the unused places expired: %v", i, err)
		}
	}
	if err := m.Admit(ctx, "agt_1"); !errors.Is(err, jobs.ErrTooManyJobs) {
		t.Fatalf("one more: %v; want ErrTooManyJobs", err)
	}
}
