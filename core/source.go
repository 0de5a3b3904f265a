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

// ConfirmationNeeded reports whether calls of d through the executor src
// yields must carry a confirmation token, as transports publish it
// (httpx's requires_confirmation, mcpx's tool metadata) without building
// a lazy executor: the executor's own answer ([Executor.NeedsConfirmation])
// once it exists; before a lazy executor's first build, whether d was
// defined WithConfirmation (a capability an executor without a Confirmer
// refuses to serve), since the executor's rule is not known yet.
func ConfirmationNeeded[C, P any](src ExecutorSource[C, P], d *Definition) bool {
	switch s := src.(type) {
	case *Executor[C, P]:
		return s.NeedsConfirmation(d)
	case interface{ Built() *Executor[C, P] }:
		if e := s.Built(); e != nil {
			return e.NeedsConfirmation(d)
		}
	}
	return d.RequiresConfirmation()
}
