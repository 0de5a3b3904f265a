package core_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/agentcap/agentcap/core"
)

func TestLazyKnowsItsRegistryBeforeTheBuild(t *testing.T) {
	reg := core.MustRegistry(transferCap)
	var builds atomic.Int32
	l := core.Lazy(reg, func(context.Context) (*core.Executor, error) {
		builds.Add(1)
		return core.NewExecutor(reg, createContext, core.Config{})
	})
	if l.Registry() != reg || l.Built() != nil || builds.Load() != 0 {
		t.Fatalf("before the build: registry %p (want %p), built %v, builds %d", l.Registry(), reg, l.Built(), builds.Load())
	}
	e, err := l.Executor(context.Background())
	if err != nil || e == nil || l.Built() != e || e.Registry() != reg {
		t.Fatalf("Executor: %v %v", e, err)
	}
	if l.Registry() != reg {
		t.Errorf("after the build: registry %p, want %p", l.Registry(), reg)
	}
	if builds.Load() != 1 {
		t.Errorf("builds = %d", builds.Load())
	}
}

func TestLazyRefusesAnotherRegistry(t *testing.T) {
	listed := core.MustRegistry(transferCap)
	other := core.MustRegistry(transferCap)
	var calls atomic.Int32
	l := core.Lazy(listed, func(context.Context) (*core.Executor, error) {
		reg := other
		if calls.Add(1) > 1 {
			reg = listed
		}
		return core.NewExecutor(reg, createContext, core.Config{})
	})
	if _, err := l.Executor(context.Background()); err == nil {
		t.Fatal("an executor of another registry was accepted")
	}
	if l.Built() != nil {
		t.Fatal("the refused executor was memoized")
	}
	if e, err := l.Executor(context.Background()); err != nil || e.Registry() != listed {
		t.Fatalf("retry: %v", err)
	}
}

func TestExecutorIsItsOwnSource(t *testing.T) {
	e := core.MustExecutor(core.MustRegistry(transferCap), createContext, core.Config{})
	var src core.Source = e
	got, err := src.Executor(context.Background())
	if err != nil || got != e || src.Registry() != e.Registry() {
		t.Fatalf("Executor = %p, %v", got, err)
	}
}

func TestLazyBuildFailuresAreErrors(t *testing.T) {
	for name, build := range map[string]func(context.Context) (*core.Executor, error){
		"panic":        func(context.Context) (*core.Executor, error) { panic("no database") },
		"nil executor": func(context.Context) (*core.Executor, error) { return nil, nil },
	} {
		l := core.Lazy(core.MustRegistry(transferCap), build)
		e, err := l.Executor(context.Background())
		if err == nil || e != nil || errors.Is(err, context.Canceled) || l.Built() != nil {
			t.Errorf("%s: %v, %v", name, e, err)
		}
	}
}

// TestNeedsConfirmationOfSources: a source says which capabilities need a
// confirmation token: a lazy one, before its build, those defined
// WithConfirmation, without building; afterwards, and a built executor
// always, what the executor's rule says.
func TestNeedsConfirmationOfSources(t *testing.T) {
	noop := func(context.Context, app, core.NoInput) (payOut, error) { return payOut{}, nil }
	must := core.MustDefine("must", "Defined WithConfirmation.", noop, core.WithConfirmation())
	risky := core.MustDefine("risky", "High risk.", noop, core.WithRisk(core.RiskHigh))
	plain := core.MustDefine("plain", "Low risk.", noop)
	reg := core.MustRegistry(must, risky, plain)
	var builds atomic.Int32
	l := core.Lazy(reg, func(context.Context) (*core.Executor, error) {
		builds.Add(1)
		return core.NewExecutor(reg, createContext, core.Config{Confirmation: core.ConfirmationConfig{Confirmer: newManager(t)}})
	})
	needs := func(src core.Source) [3]bool {
		return [3]bool{src.NeedsConfirmation(must.Definition()), src.NeedsConfirmation(risky.Definition()), src.NeedsConfirmation(plain.Definition())}
	}
	if got := needs(l); got != [3]bool{true, false, false} || builds.Load() != 0 || l.Built() != nil {
		t.Fatalf("before the build: %v (%d builds)", got, builds.Load())
	}
	e, err := l.Executor(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := needs(l); got != [3]bool{true, true, false} {
		t.Errorf("after the build: %v", got)
	}
	if got := needs(e); got != needs(l) {
		t.Errorf("the built executor says %v, the lazy one %v", got, needs(l))
	}
	// Another rule: the built executor's answer, not the definitions'.
	onlyPlain := core.MustExecutor(reg, createContext, core.Config{Confirmation: core.ConfirmationConfig{
		Confirmer: newManager(t), Rule: func(d *core.Definition) bool { return d.Name() == "plain" }}})
	l = core.Lazy(reg, func(context.Context) (*core.Executor, error) { return onlyPlain, nil })
	if got := needs(l); got != [3]bool{true, false, false} {
		t.Errorf("before the build: %v", got)
	}
	if _, err := l.Executor(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := needs(l); got != [3]bool{false, false, true} || got != needs(onlyPlain) {
		t.Errorf("after the build with another rule: %v", got)
	}
}
