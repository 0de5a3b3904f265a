package core

import (
	"context"
	"sync"
)

// LazyExecutor builds an executor on first use. See Lazy.
type LazyExecutor[C, P any] struct {
	build func(context.Context) (*Executor[C, P], error)

	mu       sync.Mutex
	exec     *Executor[C, P]
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
func Lazy[C, P any](build func(ctx context.Context) (*Executor[C, P], error)) *LazyExecutor[C, P] {
	return &LazyExecutor[C, P]{build: build}
}

// Get returns the executor, building it if needed.
func (l *LazyExecutor[C, P]) Get(ctx context.Context) (*Executor[C, P], error) {
	l.mu.Lock()
	if l.exec != nil {
		e := l.exec
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
	l.mu.Lock()
	if err == nil {
		l.exec = exec
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
