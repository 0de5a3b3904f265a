package core

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// LazyExecutor builds an executor on first use. See Lazy.
type LazyExecutor struct {
	build func(context.Context) (*Executor, error)
	reg   *Registry

	// ready holds the executor once built, so that every later call
	// reads it without taking the lock.
	ready atomic.Pointer[Executor]

	mu       sync.Mutex
	inflight *lazyBuild
}

type lazyBuild struct {
	done chan struct{}
	exec *Executor
	err  error
}

// Lazy returns a LazyExecutor that builds an executor of reg with build
// on first use, so that a program can serve listings before what the
// executor needs (a database, say) is reachable: Registry returns reg at
// once. The first successful build is memoized. Concurrent first callers
// share one in-flight build. A failed build is not memoized: the next call
// builds again. The build runs with the first caller's context values but
// not its cancellation, so one caller giving up does not fail the build
// for the others; each caller stops waiting when its own context ends. A
// build that returns an executor of another registry fails (and is
// retried like any failed build): what was listed must be what runs.
func Lazy(reg *Registry, build func(ctx context.Context) (*Executor, error)) *LazyExecutor {
	return &LazyExecutor{build: build, reg: reg}
}

// errOtherRegistry fails a build whose executor serves another
// registry than the one given.
var errOtherRegistry = errors.New("agentcap: lazy build returned an executor of another registry")

// Registry returns the registry given to Lazy.
func (l *LazyExecutor) Registry() *Registry { return l.reg }

// Built returns the executor if a build has succeeded, and nil otherwise.
// It never starts a build.
func (l *LazyExecutor) Built() *Executor { return l.ready.Load() }

// Executor returns the executor, building it if needed.
func (l *LazyExecutor) Executor(ctx context.Context) (*Executor, error) {
	if e := l.ready.Load(); e != nil {
		return e, nil
	}
	l.mu.Lock()
	if e := l.ready.Load(); e != nil {
		l.mu.Unlock()
		return e, nil
	}
	b := l.inflight
	if b == nil {
		b = &lazyBuild{done: make(chan struct{})}
		l.inflight = b
		go l.run(context.WithoutCancel(ctx), b)
	}
	l.mu.Unlock()

	select {
	case <-b.done:
		return b.exec, b.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *LazyExecutor) run(ctx context.Context, b *lazyBuild) {
	exec, err := protectBuild(ctx, l.build)
	if err == nil && exec.reg != l.reg {
		exec, err = nil, errOtherRegistry
	}
	l.mu.Lock()
	if err == nil {
		l.ready.Store(exec)
	}
	l.inflight = nil
	l.mu.Unlock()
	b.exec, b.err = exec, err
	close(b.done)
}

func protectBuild(ctx context.Context, build func(context.Context) (*Executor, error)) (exec *Executor, err error) {
	err = protect(func() error {
		var berr error
		exec, berr = build(ctx)
		if berr == nil && exec == nil {
			berr = errNilExecutor
		}
		return berr
	})
	return exec, err
}

// NeedsConfirmation reports whether calls of d must carry a confirmation
// token: the built executor's answer (Executor.NeedsConfirmation) once it
// exists; before the first build, whether d was defined WithConfirmation
// (a capability an executor without a Confirmer refuses to serve), since
// the executor's rule is not known yet.
func (l *LazyExecutor) NeedsConfirmation(d *Definition) bool {
	if e := l.ready.Load(); e != nil {
		return e.NeedsConfirmation(d)
	}
	return d.RequiresConfirmation()
}

var errNilExecutor = errors.New("agentcap: lazy build returned a nil executor")
