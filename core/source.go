package core

import "context"

// ExecutorSource yields the executor a transport runs capabilities with,
// and the registry that executor serves. The registry is known before the
// executor exists, so a transport can list and describe capabilities from
// it alone and ask for the executor only when something is to run.
//
// A built *Executor is a source of itself; a *LazyExecutor made by
// LazyFor builds its executor on the first Get. Transports (httpx, and any
// other) take an ExecutorSource to offer both.
type ExecutorSource[C, P any] interface {
	// Registry returns the registry of the executor Get yields.
	Registry() *Registry
	// Get returns the executor, building it if the source is lazy. An
	// error means no executor is available now; a later call may succeed.
	Get(ctx context.Context) (*Executor[C, P], error)
}

var (
	_ ExecutorSource[struct{}, struct{}] = (*Executor[struct{}, struct{}])(nil)
	_ ExecutorSource[struct{}, struct{}] = (*LazyExecutor[struct{}, struct{}])(nil)
)

// Get returns e itself: a built executor is its own ExecutorSource.
func (e *Executor[C, P]) Get(context.Context) (*Executor[C, P], error) { return e, nil }
