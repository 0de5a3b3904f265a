package core_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcap/agentcap/core"
)

// lazyReg is the registry of the lazy executors of the tests.
var lazyReg = core.MustRegistry(transferCap)

func TestLazySharesOneBuildAndMemoizes(t *testing.T) {
	var builds atomic.Int32
	release := make(chan struct{})
	l := core.Lazy(lazyReg, func(context.Context) (*core.Executor, error) {
		builds.Add(1)
		<-release
		return core.NewExecutor(lazyReg, createContext, core.Config{})
	})
	const n = 64
	var wg sync.WaitGroup
	got := make([]*core.Executor, n)
	for i := range n {
		wg.Go(func() {
			e, err := l.Executor(context.Background())
			if err != nil {
				t.Error(err)
			}
			got[i] = e
		})
	}
	time.Sleep(10 * time.Millisecond) // let the callers pile up on the one build
	close(release)
	wg.Wait()
	for _, e := range got {
		if e == nil || e != got[0] {
			t.Fatal("callers got different executors")
		}
	}
	if e, _ := l.Executor(context.Background()); e != got[0] || builds.Load() != 1 {
		t.Fatalf("builds = %d, want 1", builds.Load())
	}
}

func TestLazyRetriesAfterFailure(t *testing.T) {
	var builds atomic.Int32
	l := core.Lazy(lazyReg, func(context.Context) (*core.Executor, error) {
		if builds.Add(1) == 1 {
			return nil, errors.New("database not ready")
		}
		return core.NewExecutor(lazyReg, createContext, core.Config{})
	})
	if _, err := l.Executor(context.Background()); err == nil {
		t.Fatal("first build should fail")
	}
	e, err := l.Executor(context.Background())
	if err != nil || e == nil {
		t.Fatalf("retry: %v", err)
	}
	if builds.Load() != 2 {
		t.Fatalf("builds = %d", builds.Load())
	}
}

func TestLazyCallerCancellationDoesNotFailOthers(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	l := core.Lazy(lazyReg, func(ctx context.Context) (*core.Executor, error) {
		close(started)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return core.NewExecutor(lazyReg, createContext, core.Config{})
	})
	first, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := l.Executor(first)
		errc <- err
	}()
	<-started
	var other sync.WaitGroup
	var otherExec *core.Executor
	var otherErr error
	other.Go(func() { otherExec, otherErr = l.Executor(context.Background()) })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled caller: %v", err)
	}
	close(release)
	other.Wait()
	if otherErr != nil || otherExec == nil {
		t.Fatalf("the other caller failed: %v", otherErr)
	}
}
