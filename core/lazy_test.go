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

func TestLazySharesOneBuildAndMemoizes(t *testing.T) {
	var builds atomic.Int32
	release := make(chan struct{})
	l := core.Lazy(func(context.Context) (*core.Executor[app, user], error) {
		builds.Add(1)
		<-release
		return core.NewExecutor(core.MustRegistry(transferCap), core.ExecutorConfig[app, user]{CreateContext: createContext})
	})
	const n = 64
	var wg sync.WaitGroup
	got := make([]*core.Executor[app, user], n)
	for i := range n {
		wg.Go(func() {
			e, err := l.Get(context.Background())
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
	if e, _ := l.Get(context.Background()); e != got[0] || builds.Load() != 1 {
		t.Fatalf("builds = %d, want 1", builds.Load())
	}
}

func TestLazyRetriesAfterFailure(t *testing.T) {
	var builds atomic.Int32
	l := core.Lazy(func(context.Context) (*core.Executor[app, user], error) {
		if builds.Add(1) == 1 {
			return nil, errors.New("database not ready")
		}
		return core.NewExecutor(core.MustRegistry(transferCap), core.ExecutorConfig[app, user]{CreateContext: createContext})
	})
	if _, err := l.Get(context.Background()); err == nil {
		t.Fatal("first build should fail")
	}
	e, err := l.Get(context.Background())
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
	l := core.Lazy(func(ctx context.Context) (*core.Executor[app, user], error) {
		close(started)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return core.NewExecutor(core.MustRegistry(transferCap), core.ExecutorConfig[app, user]{CreateContext: createContext})
	})
	first, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := l.Get(first)
		errc <- err
	}()
	<-started
	var other sync.WaitGroup
	var otherExec *core.Executor[app, user]
	var otherErr error
	other.Go(func() { otherExec, otherErr = l.Get(context.Background()) })
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
