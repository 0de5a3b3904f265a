package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/jobs"
)

// JobsFactory makes the stores under test.
type JobsFactory struct {
	// New returns an empty store, closed by the test's cleanup.
	New func(t *testing.T) jobs.Store
	// Reopen returns a second store on the records of s, as another
	// instance or the same process after a restart would open it. For a
	// store that cannot share its records (jobs.MemoryStore) it returns s.
	Reopen func(t *testing.T, s jobs.Store) jobs.Store
}

// base is a time with whole milliseconds, which every store keeps.
var jobsBase = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Jobs runs the suite of a jobs store.
func Jobs(t *testing.T, f JobsFactory) {
	t.Run("CreateGet", func(t *testing.T) { testCreateGet(t, f) })
	t.Run("FinishOnce", func(t *testing.T) { testFinishOnce(t, f) })
	t.Run("Progress", func(t *testing.T) { testProgress(t, f) })
	t.Run("Renew", func(t *testing.T) { testRenew(t, f) })
	t.Run("ExpireLeases", func(t *testing.T) { testExpire(t, f) })
	t.Run("Sweep", func(t *testing.T) { jobsTestSweep(t, f) })
	t.Run("Restart", func(t *testing.T) { testRestart(t, f) })
	t.Run("TwoInstances", func(t *testing.T) { testTwoInstances(t, f) })
	t.Run("CancelElsewhere", func(t *testing.T) { testCancelElsewhere(t, f) })
	t.Run("InstanceLost", func(t *testing.T) { testInstanceLost(t, f) })
	t.Run("CountOwner", func(t *testing.T) { testCountOwner(t, f) })
	t.Run("OwnerBounds", func(t *testing.T) { testOwnerBounds(t, f) })
}

func pending(id string) *jobs.Record {
	return &jobs.Record{ID: id, Owner: "agt_1", Capability: "export", State: jobs.StatePending,
		Instance: "a", LeaseUntil: jobsBase.Add(time.Minute), Created: jobsBase, Updated: jobsBase}
}

func testCreateGet(t *testing.T, f JobsFactory) {
	ctx := context.Background()
	s := f.New(t)
	rec := pending("job_1")
	rec.Progress = &core.Progress{Progress: 2, Total: 10, Message: "two of ten"}
	if err := s.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, pending("job_1")); !errors.Is(err, jobs.ErrExists) {
		t.Errorf("second create: %v, want ErrExists", err)
	}
	got, err := s.Get(ctx, "job_1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rec, got); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if _, err := s.Get(ctx, "job_none"); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("unknown: %v, want ErrNotFound", err)
	}
	done := &jobs.Record{ID: "job_2", Owner: "agt_1", Capability: "export", State: jobs.StateFailed,
		Failure:  &jobs.Failure{Code: "limit", Message: "too much", Status: 429, Fields: map[string]any{"limit": 3.0}},
		Instance: "a", LeaseUntil: jobsBase, Created: jobsBase, Updated: jobsBase, Expires: jobsBase.Add(time.Hour)}
	if err := s.Create(ctx, done); err != nil {
		t.Fatal(err)
	}
	if got, err = s.Get(ctx, "job_2"); err != nil || !cmp.Equal(done, got) {
		t.Errorf("finished record: %v\n%s", err, cmp.Diff(done, got))
	}
}

func testFinishOnce(t *testing.T, f JobsFactory) {
	ctx := context.Background()
	s := f.New(t)
	if err := s.Create(ctx, pending("job_1")); err != nil {
		t.Fatal(err)
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			out := jobs.Outcome{State: jobs.StateCompleted, Result: json.RawMessage(`{"n":` + string(rune('0'+i%10)) + `}`), Expires: jobsBase.Add(time.Hour)}
			if i%2 == 1 {
				out = jobs.Outcome{State: jobs.StateFailed, Failure: &jobs.FailureCancelled, Expires: jobsBase.Add(time.Hour)}
			}
			won, err := s.Finish(ctx, "job_1", out, jobsBase.Add(time.Second))
			if err != nil {
				t.Error(err)
			}
			if won {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Errorf("%d finishes won, want exactly 1", wins.Load())
	}
	got, err := s.Get(ctx, "job_1")
	if err != nil {
		t.Fatal(err)
	}
	if got.State == jobs.StatePending || !got.Expires.Equal(jobsBase.Add(time.Hour)) || !got.Updated.Equal(jobsBase.Add(time.Second)) {
		t.Errorf("after finish: %+v", got)
	}
	if (got.State == jobs.StateCompleted) != (got.Result != nil && got.Failure == nil) {
		t.Errorf("inconsistent outcome: %+v", got)
	}
	if won, err := s.Finish(ctx, "job_none", jobs.Outcome{State: jobs.StateCompleted}, jobsBase); won || err != nil {
		t.Errorf("finish of an unknown job: %v %v", won, err)
	}
}

func testProgress(t *testing.T, f JobsFactory) {
	ctx := context.Background()
	s := f.New(t)
	if err := s.Create(ctx, pending("job_1")); err != nil {
		t.Fatal(err)
	}
	p := core.Progress{Progress: 5, Total: 8, Message: "five"}
	if err := s.SetProgress(ctx, "job_1", p, jobsBase.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(ctx, "job_1")
	if got.Progress == nil || *got.Progress != p {
		t.Errorf("progress %+v", got.Progress)
	}
	if _, err := s.Finish(ctx, "job_1", jobs.Outcome{State: jobs.StateCompleted, Result: json.RawMessage(`1`), Expires: jobsBase.Add(time.Hour)}, jobsBase); err != nil {
		t.Fatal(err)
	}
	if err := s.SetProgress(ctx, "job_1", core.Progress{Progress: 9}, jobsBase); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.Get(ctx, "job_1"); got.Progress == nil || *got.Progress != p {
		t.Errorf("progress of a finished job changed: %+v", got.Progress)
	}
	if err := s.SetProgress(ctx, "job_none", p, jobsBase); err != nil {
		t.Errorf("progress of an unknown job: %v", err)
	}
}

func testRenew(t *testing.T, f JobsFactory) {
	ctx := context.Background()
	s := f.New(t)
	for _, id := range []string{"job_a1", "job_a2", "job_done"} {
		if err := s.Create(ctx, pending(id)); err != nil {
			t.Fatal(err)
		}
	}
	other := pending("job_b")
	other.Instance = "b"
	if err := s.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(ctx, "job_done", jobs.Outcome{State: jobs.StateFailed, Failure: &jobs.FailureCancelled, Expires: jobsBase}, jobsBase); err != nil {
		t.Fatal(err)
	}
	until := jobsBase.Add(5 * time.Minute)
	gone, err := s.Renew(ctx, "a", []string{"job_a1", "job_a2", "job_done", "job_b", "job_none"}, until, jobsBase)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"job_done", "job_b", "job_none"}, gone); diff != "" {
		t.Errorf("gone (-want +got):\n%s", diff)
	}
	for id, want := range map[string]time.Time{"job_a1": until, "job_a2": until, "job_b": jobsBase.Add(time.Minute)} {
		got, _ := s.Get(ctx, id)
		if !got.LeaseUntil.Equal(want) {
			t.Errorf("%s: lease %v, want %v", id, got.LeaseUntil, want)
		}
	}
}

func testExpire(t *testing.T, f JobsFactory) {
	ctx := context.Background()
	s := f.New(t)
	late := pending("job_late")
	late.LeaseUntil = jobsBase.Add(-time.Second)
	for _, r := range []*jobs.Record{late, pending("job_fine")} {
		if err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	lost := jobs.FailureInstanceLost
	n, err := s.ExpireLeases(ctx, jobsBase, jobs.Outcome{State: jobs.StateFailed, Failure: &lost, Expires: jobsBase.Add(time.Hour)})
	if err != nil || n != 1 {
		t.Fatalf("expired %d (%v), want 1", n, err)
	}
	got, _ := s.Get(ctx, "job_late")
	if got.State != jobs.StateFailed || got.Failure == nil || got.Failure.Code != "instance_lost" {
		t.Errorf("late job: %+v", got)
	}
	if got, _ = s.Get(ctx, "job_fine"); got.State != jobs.StatePending {
		t.Errorf("job within its lease: %+v", got)
	}
}

func jobsTestSweep(t *testing.T, f JobsFactory) {
	ctx := context.Background()
	s := f.New(t)
	for _, id := range []string{"job_old", "job_new", "job_pending"} {
		if err := s.Create(ctx, pending(id)); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = s.Finish(ctx, "job_old", jobs.Outcome{State: jobs.StateCompleted, Result: json.RawMessage(`1`), Expires: jobsBase.Add(-time.Second)}, jobsBase)
	_, _ = s.Finish(ctx, "job_new", jobs.Outcome{State: jobs.StateCompleted, Result: json.RawMessage(`1`), Expires: jobsBase.Add(time.Second)}, jobsBase)
	n, err := s.Sweep(ctx, jobsBase)
	if err != nil || n != 1 {
		t.Fatalf("swept %d (%v), want 1", n, err)
	}
	if _, err := s.Get(ctx, "job_old"); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("swept job: %v", err)
	}
	for _, id := range []string{"job_new", "job_pending"} {
		if _, err := s.Get(ctx, id); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
}

func testRestart(t *testing.T, f JobsFactory) {
	ctx := context.Background()
	s := f.New(t)
	m := newManager(t, s, "a")
	rec := startJob(t, m, "agt_1", func(ctx context.Context) (json.RawMessage, error) {
		return json.RawMessage(`{"rows":3}`), nil
	})
	waitState(t, m, "agt_1", rec.ID, jobs.StateCompleted)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	again := newManager(t, f.Reopen(t, s), "a2")
	got, err := again.Get(ctx, "agt_1", rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != jobs.StateCompleted || string(got.Result) != `{"rows":3}` {
		t.Errorf("after restart: %+v", got)
	}
}

func testTwoInstances(t *testing.T, f JobsFactory) {
	ctx := context.Background()
	s := f.New(t)
	a := newManager(t, s, "a")
	b := newManager(t, f.Reopen(t, s), "b")
	release := make(chan struct{})
	rec := startJob(t, a, "agt_1", func(ctx context.Context) (json.RawMessage, error) {
		core.ReportProgress(ctx, core.Progress{Progress: 1, Total: 2, Message: "half"})
		<-release
		return json.RawMessage(`{"ok":true}`), nil
	})
	got := waitFor(t, b, "agt_1", rec.ID, func(r *jobs.Record) bool { return r.Progress != nil })
	if got.State != jobs.StatePending || got.Progress.Message != "half" || got.Instance != "a" {
		t.Errorf("polled on b while running on a: %+v", got)
	}
	if _, err := b.Get(ctx, "agt_2", rec.ID); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("another owner: %v, want ErrNotFound", err)
	}
	close(release)
	got = waitState(t, b, "agt_1", rec.ID, jobs.StateCompleted)
	if string(got.Result) != `{"ok":true}` {
		t.Errorf("result on b: %s", got.Result)
	}
}

func testCancelElsewhere(t *testing.T, f JobsFactory) {
	ctx := context.Background()
	s := f.New(t)
	a := newManager(t, s, "a")
	b := newManager(t, f.Reopen(t, s), "b")
	cancelled := make(chan error, 1)
	rec := startJob(t, a, "agt_1", func(ctx context.Context) (json.RawMessage, error) {
		<-ctx.Done()
		cancelled <- ctx.Err()
		return nil, ctx.Err()
	})
	if _, err := b.Cancel(ctx, "agt_2", rec.ID); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("cancel by another owner: %v", err)
	}
	got, err := b.Cancel(ctx, "agt_1", rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != jobs.StateFailed || got.Failure.Code != "cancelled" {
		t.Errorf("after cancel: %+v", got)
	}
	a.Maintain(ctx)
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler on a was not cancelled")
	}
	// The handler's own error does not replace the cancellation.
	time.Sleep(10 * time.Millisecond)
	if got, _ = a.Get(ctx, "agt_1", rec.ID); got.Failure == nil || got.Failure.Code != "cancelled" {
		t.Errorf("final: %+v", got)
	}
	// Cancelling a finished job changes nothing.
	if got, _ = b.Cancel(ctx, "agt_1", rec.ID); got.Failure.Code != "cancelled" {
		t.Errorf("second cancel: %+v", got)
	}
}

func testInstanceLost(t *testing.T, f JobsFactory) {
	ctx := context.Background()
	s := f.New(t)
	// A record left by an instance that died: nobody renews its lease.
	dead := pending("job_dead")
	dead.Instance = "dead"
	dead.LeaseUntil = time.Now().Add(-time.Second).Truncate(time.Millisecond)
	if err := s.Create(ctx, dead); err != nil {
		t.Fatal(err)
	}
	b := newManager(t, f.Reopen(t, s), "b")
	b.Maintain(ctx)
	got, err := b.Get(ctx, "agt_1", "job_dead")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != jobs.StateFailed || got.Failure == nil || got.Failure.Code != "instance_lost" {
		t.Errorf("lost job: %+v", got)
	}
	// A running job of a live instance keeps its lease.
	a := newManager(t, s, "a")
	release := make(chan struct{})
	rec := startJob(t, a, "agt_1", func(ctx context.Context) (json.RawMessage, error) {
		<-release
		return json.RawMessage(`1`), nil
	})
	a.Maintain(ctx)
	b.Maintain(ctx)
	if got, _ = b.Get(ctx, "agt_1", rec.ID); got.State != jobs.StatePending {
		t.Errorf("live job: %+v", got)
	}
	close(release)
	waitState(t, b, "agt_1", rec.ID, jobs.StateCompleted)
}

func newManager(t *testing.T, s jobs.Store, instance string) *jobs.Manager {
	t.Helper()
	m, err := jobs.New(jobs.Config{Store: s, Instance: instance, Lease: 10 * time.Second, ProgressInterval: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// startJob starts run as a job of owner and detaches it at once.
func startJob(t *testing.T, m *jobs.Manager, owner string, run func(ctx context.Context) (json.RawMessage, error)) *jobs.Record {
	t.Helper()
	c := m.Call(context.Background(), owner, "export", run)
	rec, err := c.Detach(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func waitState(t *testing.T, m *jobs.Manager, owner, id string, want jobs.State) *jobs.Record {
	t.Helper()
	return waitFor(t, m, owner, id, func(r *jobs.Record) bool { return r.State == want })
}

func waitFor(t *testing.T, m *jobs.Manager, owner, id string, ok func(*jobs.Record) bool) *jobs.Record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec, err := m.Get(context.Background(), owner, id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(rec) {
			return rec
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: still %+v", id, rec)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testCountOwner: an owner's pending jobs, and its jobs in all (pending,
// or finished and not past their Expires), and nobody else's.
func testCountOwner(t *testing.T, f JobsFactory) {
	ctx := context.Background()
	s := f.New(t)
	count := func(owner string, now time.Time) [2]int {
		t.Helper()
		p, k, err := s.CountOwner(ctx, owner, now)
		if err != nil {
			t.Fatal(err)
		}
		return [2]int{p, k}
	}
	if got := count("agt_1", jobsBase); got != [2]int{0, 0} {
		t.Fatalf("no jobs: %v", got)
	}
	for _, id := range []string{"job_1", "job_2", "job_3"} {
		if err := s.Create(ctx, pending(id)); err != nil {
			t.Fatal(err)
		}
	}
	other := pending("job_4")
	other.Owner = "agt_2"
	if err := s.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if won, err := s.Finish(ctx, "job_1", jobs.Outcome{State: jobs.StateCompleted, Result: json.RawMessage(`{}`), Expires: jobsBase.Add(time.Hour)}, jobsBase); !won || err != nil {
		t.Fatal(won, err)
	}
	if got := count("agt_1", jobsBase); got != [2]int{2, 3} {
		t.Errorf("agt_1: %v, want 2 pending of 3", got)
	}
	if got := count("agt_2", jobsBase); got != [2]int{1, 1} {
		t.Errorf("agt_2: %v, want 1 pending of 1", got)
	}
	// A finished job past its Expires is not counted, swept or not.
	if got := count("agt_1", jobsBase.Add(2*time.Hour)); got != [2]int{2, 2} {
		t.Errorf("agt_1 after the retention: %v, want 2 pending of 2", got)
	}
	if _, err := s.Sweep(ctx, jobsBase.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := count("agt_1", jobsBase.Add(2*time.Hour)); got != [2]int{2, 2} {
		t.Errorf("agt_1 after the sweep: %v, want 2 pending of 2", got)
	}
}

// testOwnerBounds: a manager admits no job of an owner at one of its
// bounds, counted through the store, so across instances sharing it.
func testOwnerBounds(t *testing.T, f JobsFactory) {
	ctx := context.Background()
	s := f.New(t)
	managers := make([]*jobs.Manager, 2)
	for i, st := range []jobs.Store{s, f.Reopen(t, s)} {
		m, err := jobs.New(jobs.Config{Store: st, MaxPendingPerOwner: 2, MaxPerOwner: 3})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		managers[i] = m
	}
	release := make(chan struct{})
	defer close(release)
	start := func(m *jobs.Manager, owner string) *jobs.Call {
		t.Helper()
		if err := m.Admit(ctx, owner); err != nil {
			t.Fatalf("%s: %v", owner, err)
		}
		c := m.Call(ctx, owner, "export", func(ctx context.Context) (json.RawMessage, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return json.RawMessage(`{}`), nil
		})
		if _, err := c.Detach(ctx); err != nil {
			t.Fatal(err)
		}
		return c
	}
	first := start(managers[0], "agt_1")
	start(managers[1], "agt_1")
	for _, m := range managers {
		if err := m.Admit(ctx, "agt_1"); !errors.Is(err, jobs.ErrTooManyJobs) {
			t.Fatalf("a third job running at once: %v; want ErrTooManyJobs", err)
		}
	}
	start(managers[1], "agt_2")
	// A finished job makes room to run, not to keep: the owner has
	// three once a third one starts.
	if _, err := managers[0].Cancel(ctx, "agt_1", first.ID()); err != nil {
		t.Fatal(err)
	}
	start(managers[0], "agt_1")
	if err := managers[1].Admit(ctx, "agt_1"); !errors.Is(err, jobs.ErrTooManyJobs) {
		t.Fatalf("a fourth job kept: %v; want ErrTooManyJobs", err)
	}
}
