package core

import "context"

// Source yields the executor a transport runs capabilities with, and the
// registry that executor serves. The registry is known before the
// executor exists, so that a transport can list and describe capabilities
// from it alone and ask for the executor only when something is to run.
// A built *Executor is a Source of itself; a *LazyExecutor builds its
// executor on the first call of Executor. Transports (httpx, mcpx) take a
// Source to offer both.
type Source interface {
	// Registry returns the registry of the executor Executor yields.
	Registry() *Registry
	// Executor returns the executor, building it if the source is lazy.
	// An error means no executor is available now; a later call may
	// succeed.
	Executor(ctx context.Context) (*Executor, error)
	// NeedsConfirmation reports whether calls of d must carry a
	// confirmation token, as transports publish it (httpx's
	// requires_confirmation, mcpx's tool metadata), without building a
	// lazy executor: see Executor.NeedsConfirmation and
	// LazyExecutor.NeedsConfirmation.
	NeedsConfirmation(d *Definition) bool
}

var (
	_ Source = (*Executor)(nil)
	_ Source = (*LazyExecutor)(nil)
)

// Executor returns e itself: a built executor is its own Source.
func (e *Executor) Executor(context.Context) (*Executor, error) { return e, nil }
