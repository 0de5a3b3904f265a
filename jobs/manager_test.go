package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/jobs"
)

type waitIn struct {
	Millis int `json:"millis" minimum:"0"`
}

type waitOut struct {
	Waited int `json:"waited"`
}

// codeUnlucky is the application's own refusal of a wait of 13 ms.
var codeUnlucky = agentcap.NewCode("unlucky", agentcap.CodeConflict)

var wait = core.MustDefine("wait", "Wait, then answer.",
	func(ctx context.Context, _ struct{}, in waitIn) (waitOut, error) {
		core.ReportProgress(ctx, core.Progress{Progress: 0, Total: 1, Message: "waiting"})
		select {
		case <-ctx.Done():
			return waitOut{}, ctx.Err()
		case <-time.After(time.Duration(in.Millis) * time.Millisecond):
		}
		if in.Millis == 13 {
			return waitOut{}, agentcap.NewError(codeUnlucky, "thirteen").With("retry", false)
		}
		return waitOut{Waited: in.Millis}, nil
	}, core.WithAsync())

// executor runs "wait" for identified callers only.
func executor(t *testing.T) *core.Executor {
	t.Helper()
	return core.MustExecutor(core.MustRegistry(wait), func(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (struct{}, error) {
		if id == nil {
			return struct{}{}, core.ErrForbidden
		}
		return struct{}{}, nil
	}, core.Config{})
}

// caller is the identity of owner; none for "".
func caller(owner string) *auth.Identity {
	if owner == "" {
		return nil
	}
	return &auth.Identity{Subject: owner}
}

func start(m *jobs.Manager, e *core.Executor, owner, args string) *jobs.Call {
	return m.Call(context.Background(), owner, "wait", func(ctx context.Context) (json.RawMessage, error) {
		return e.Execute(ctx, "wait", caller(owner), []byte(args))
	})
}

func manager(t *testing.T, cfg jobs.Config) *jobs.Manager {
	t.Helper()
	m, err := jobs.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func poll(t *testing.T, m *jobs.Manager, owner, id string) *jobs.Record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec, err := m.Get(context.Background(), owner, id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.State != jobs.StatePending || time.Now().After(deadline) {
			return rec
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A call refused before its handler starts never starts and leaves no
// record; one that starts can be detached and ends in its record.
func TestCallStartsOnlyWhenTheHandlerRuns(t *testing.T) {
	e := executor(t)
	m := manager(t, jobs.Config{})
	refused := start(m, e, "", `{"millis":1}`)
	<-refused.Done()
	select {
	case <-refused.Started():
		t.Error("a refused call started")
	default:
	}
	if _, err := refused.Result(); !errors.Is(err, core.ErrForbidden) {
		t.Errorf("refused: %v", err)
	}
	if _, err := m.Get(context.Background(), "", refused.ID()); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("a refused call has a record: %v", err)
	}

	c := start(m, e, "agt_1", `{"millis":30}`)
	<-c.Started()
	rec, err := c.Detach(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != jobs.StatePending || rec.Owner != "agt_1" || rec.Capability != "wait" || rec.ID != c.ID() {
		t.Errorf("detached: %+v", rec)
	}
	got := poll(t, m, "agt_1", c.ID())
	if got.State != jobs.StateCompleted || string(got.Result) != `{"waited":30}` {
		t.Errorf("finished: %+v", got)
	}
	if got.Progress == nil || got.Progress.Message != "waiting" {
		t.Errorf("progress: %+v", got.Progress)
	}
}

func TestFailuresKeepTheirPublicParts(t *testing.T) {
	e := executor(t)
	m := manager(t, jobs.Config{})
	c := start(m, e, "agt_1", `{"millis":13}`)
	if _, err := c.Detach(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := poll(t, m, "agt_1", c.ID())
	want := &jobs.Failure{Code: "unlucky", Message: "thirteen", Status: 409, Fields: map[string]any{"retry": false}}
	if diff := cmp.Diff(want, got.Failure); diff != "" {
		t.Errorf("failure (-want +got):\n%s", diff)
	}
	if f := jobs.FailureOf(errors.New("secret detail")); f.Code != "internal_error" || f.Message != "internal error" {
		t.Errorf("plain error: %+v", f)
	}
}

func TestJobTimeout(t *testing.T) {
	e := executor(t)
	m := manager(t, jobs.Config{Timeout: 20 * time.Millisecond})
	c := start(m, e, "agt_1", `{"millis":5000}`)
	if _, err := c.Detach(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := poll(t, m, "agt_1", c.ID()); got.Failure == nil || got.Failure.Code != "timeout" {
		t.Errorf("timed out job: %+v", got)
	}
}

// The job outlives the request that started it.
func TestJobIsDetachedFromTheRequest(t *testing.T) {
	e := executor(t)
	m := manager(t, jobs.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	c := m.Call(ctx, "agt_1", "wait", func(ctx context.Context) (json.RawMessage, error) {
		return e.Execute(ctx, "wait", caller("agt_1"), []byte(`{"millis":30}`))
	})
	if _, err := c.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if got := poll(t, m, "agt_1", c.ID()); got.State != jobs.StateCompleted {
		t.Errorf("after the request ended: %+v", got)
	}
}

func TestCancelWhileAttached(t *testing.T) {
	e := executor(t)
	m := manager(t, jobs.Config{})
	c := start(m, e, "agt_1", `{"millis":5000}`)
	<-c.Started()
	c.Cancel()
	if _, err := c.Result(); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
}

func TestDetachAfterTheEnd(t *testing.T) {
	e := executor(t)
	m := manager(t, jobs.Config{})
	c := start(m, e, "agt_1", `{"millis":0}`)
	<-c.Done()
	rec, err := c.Detach(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != jobs.StateCompleted || string(rec.Result) != `{"waited":0}` || rec.Expires.IsZero() {
		t.Errorf("record of a finished call: %+v", rec)
	}
}

func TestCancelByOwner(t *testing.T) {
	e := executor(t)
	m := manager(t, jobs.Config{})
	c := start(m, e, "agt_1", `{"millis":5000}`)
	if _, err := c.Detach(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec, err := m.Cancel(context.Background(), "agt_1", c.ID())
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != jobs.StateFailed || rec.Failure.Code != "cancelled" {
		t.Errorf("cancelled: %+v", rec)
	}
	if _, err := c.Result(); !errors.Is(err, context.Canceled) {
		t.Errorf("the handler's context was not cancelled: %v", err)
	}
}

func TestCloseLosesRunningJobs(t *testing.T) {
	e := executor(t)
	s := jobs.NewMemoryStore()
	m, err := jobs.New(jobs.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	c := start(m, e, "agt_1", `{"millis":5000}`)
	if _, err := c.Detach(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Get(context.Background(), c.ID())
	if err != nil {
		t.Fatal(err)
	}
	if rec.Failure == nil || rec.Failure.Code != "instance_lost" {
		t.Errorf("after close: %+v", rec)
	}
}

func TestRetentionAndSweep(t *testing.T) {
	e := executor(t)
	var offset atomic.Int64
	start0 := time.Now()
	clock := func() time.Time { return start0.Add(time.Duration(offset.Load())) }
	s := jobs.NewMemoryStore()
	m := manager(t, jobs.Config{Store: s, Retention: time.Hour, Now: clock})
	c := start(m, e, "agt_1", `{"millis":0}`)
	<-c.Done()
	if _, err := c.Detach(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.Sweep(context.Background())
	if _, err := m.Get(context.Background(), "agt_1", c.ID()); err != nil {
		t.Fatalf("swept too early: %v", err)
	}
	offset.Store(int64(time.Hour + time.Second))
	m.Sweep(context.Background())
	if _, err := m.Get(context.Background(), "agt_1", c.ID()); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("after retention: %v", err)
	}
}

func TestNewRefusesNegativeDurations(t *testing.T) {
	if _, err := jobs.New(jobs.Config{Lease: -1}); err == nil {
		t.Error("negative lease accepted")
	}
}

// TestResultTooLarge: a job's result longer than MaxResultBytes is not
// kept; the job fails with FailureResultTooLarge. One at the bound is
// kept whole.
func TestResultTooLarge(t *testing.T) {
	m := manager(t, jobs.Config{MaxResultBytes: len(`{"waited":10}`)})
	e := executor(t)
	for _, tc := range []struct {
		args string
		want jobs.State
	}{
		{`{"millis":10}`, jobs.StateCompleted},
		{`{"millis":100}`, jobs.StateFailed},
	} {
		c := start(m, e, "agt_1", tc.args)
		<-c.Started()
		if _, err := c.Detach(context.Background()); err != nil {
			t.Fatal(err)
		}
		rec := poll(t, m, "agt_1", c.ID())
		if rec.State != tc.want {
			t.Fatalf("%s: %+v", tc.args, rec)
		}
		if tc.want == jobs.StateFailed && (rec.Result != nil || rec.Failure == nil || !cmp.Equal(*rec.Failure, jobs.FailureResultTooLarge)) {
			t.Errorf("%s: result %s, failure %+v; want none and FailureResultTooLarge", tc.args, rec.Result, rec.Failure)
		}
	}
}
