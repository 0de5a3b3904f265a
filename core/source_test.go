package core_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/agentcap/agentcap/core"
)

func TestLazyForKnowsItsRegistryBeforeTheBuild(t *testing.T) {
	reg := core.MustRegistry(transferCap)
	var builds atomic.Int32
	l := core.LazyFor(reg, func(context.Context) (*core.Executor[app, user], error) {
		builds.Add(1)
		return core.NewExecutor(reg, core.ExecutorConfig[app, user]{CreateContext: createContext})
	})
	if l.Registry() != reg || l.Built() != nil || builds.Load() != 0 {
		t.Fatalf("before the build: registry %p (want %p), built %v, builds %d", l.Registry(), reg, l.Built(), builds.Load())
	}
	e, err := l.Get(context.Background())
	if err != nil || e == nil || l.Built() != e || e.Registry() != reg {
		t.Fatalf("Get: %v %v", e, err)
	}
	if builds.Load() != 1 {
		t.Errorf("builds = %d", builds.Load())
	}
}

func TestLazyForRefusesAnotherRegistry(t *testing.T) {
	listed := core.MustRegistry(transferCap)
	other := core.MustRegistry(transferCap)
	var calls atomic.Int32
	l := core.LazyFor(listed, func(context.Context) (*core.Executor[app, user], error) {
		reg := other
		if calls.Add(1) > 1 {
			reg = listed
		}
		return core.NewExecutor(reg, core.ExecutorConfig[app, user]{CreateContext: createContext})
	})
	if _, err := l.Get(context.Background()); err == nil {
		t.Fatal("an executor of another registry was accepted")
	}
	if l.Built() != nil {
		t.Fatal("the refused executor was memoized")
	}
	if e, err := l.Get(context.Background()); err != nil || e.Registry() != listed {
		t.Fatalf("retry: %v", err)
	}
}

func TestLazyRegistryAfterBuild(t *testing.T) {
	reg := core.MustRegistry(transferCap)
	l := core.Lazy(func(context.Context) (*core.Executor[app, user], error) {
		return core.NewExecutor(reg, core.ExecutorConfig[app, user]{CreateContext: createContext})
	})
	if l.Registry() != nil {
		t.Fatal("Lazy knows a registry before its build")
	}
	if _, err := l.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l.Registry() != reg {
		t.Error("Registry after the build is not the executor's")
	}
}

func TestExecutorIsItsOwnSource(t *testing.T) {
	e := core.MustExecutor(core.MustRegistry(transferCap), core.ExecutorConfig[app, user]{CreateContext: createContext})
	var src core.ExecutorSource[app, user] = e
	got, err := src.Get(context.Background())
	if err != nil || got != e || src.Registry() != e.Registry() {
		t.Fatalf("Get = %p, %v", got, err)
	}
}

func TestLazyBuildPanicIsAnError(t *testing.T) {
	l := core.LazyFor(core.MustRegistry(transferCap), func(context.Context) (*core.Executor[app, user], error) {
		panic("no database")
	})
	_, err := l.Get(context.Background())
	if err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("panicking build: %v", err)
	}
}
