package core

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// LazyExecutor builds an executor on first use. See Lazy and LazyFor.
type LazyExecutor[C, P any] struct {
	build func(context.Context) (*Executor[C, P], error)
	reg   *Registry

	// ready holds the executor once built, so that every later call
	// reads it without taking the lock.
	ready atomic.Pointer[Executor[C, P]]

	mu       sync.Mutex
	inflight *lazyBuild[C, P]
}

type lazyBuild[C, P any] struct {
	done chan struct{}
	exec *Executor[C, P]
	err  error
}

// Lazy returns a LazyExecutor around build. The first successful build is
// memoized. Concurrent first callers share one in-flight build. A failed
// build is not memoized: the next call builds again. The build runs with
// the first caller's context values but not its cancellation, so one
// caller giving up does not fail the build for the others; each caller
// stops waiting when its own context ends.
//
// A LazyExecutor from Lazy does not know its registry before the build
// (Registry returns nil); transports that serve listings without building
// the executor need LazyFor.
func Lazy[C, P any](build func(ctx context.Context) (*Executor[C, P], error)) *LazyExecutor[C, P] {
	return &LazyExecutor[C, P]{build: build}
}

// LazyFor is Lazy for an executor of reg: Registry returns reg before the
// executor exists, so a transport can list and describe capabilities
// without building it. A build that returns an executor of another
// registry fails (and is retried like any failed build): what was listed
// must be what runs.
func LazyFor[C, P any](reg *Registry, build func(ctx context.Context) (*Executor[C, P], error)) *LazyExecutor[C, P] {
	return &LazyExecutor[C, P]{build: build, reg: reg}
}

// errOtherRegistry fails a LazyFor build whose executor serves another
// registry than the one given.
var errOtherRegistry = errors.New("agentcap: lazy build returned an executor of another registry")

// Registry returns the registry given to LazyFor, or, for a LazyExecutor
// from Lazy, the built executor's registry (nil before the first
// successful build).
func (l *LazyExecutor[C, P]) Registry() *Registry {
	if l.reg != nil {
		return l.reg
	}
	if e := l.ready.Load(); e != nil {
		return e.reg
	}
	return nil
}

// Built returns the executor if a build has succeeded, and nil otherwise.
// It never starts a build.
func (l *LazyExecutor[C, P]) Built() *Executor[C, P] { return l.ready.Load() }

// Get returns the executor, building it if needed.
func (l *LazyExecutor[C, P]) Get(ctx context.Context) (*Executor[C, P], error) {
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
		b = &lazyBuild[C, P]{done: make(chan struct{})}
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

func (l *LazyExecutor[C, P]) run(ctx context.Context, b *lazyBuild[C, P]) {
	exec, err := protectBuild(ctx, l.build)
	if err == nil && l.reg != nil && exec.reg != l.reg {
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

func protectBuild[C, P any](ctx context.Context, build func(context.Context) (*Executor[C, P], error)) (exec *Executor[C, P], err error) {
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
