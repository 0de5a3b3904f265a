package core

import "context"

// WithAsync marks a capability whose calls run as jobs: a transport that
// keeps jobs answers at once that the call is pending and lets the caller
// poll for the result (httpx answers 202 with a status_url). The input is
// validated, the call authorized and the application context built before
// that answer, so a refused call fails at once, never as a job.
//
// An async capability is not bound by the executor's default timeout: the
// job runner gives every job its own deadline. [WithTimeout] still applies
// when given. Batches refuse async capabilities with batch_unsupported_result_type.
func WithAsync() Option { return func(o *options) { o.async = true } }

// Async reports whether the capability was defined WithAsync.
func (d *Definition) Async() bool { return d.async }

// longRunning reports a capability that the executor's default timeout
// does not bound.
func (d *Definition) longRunning() bool { return d.async || d.stream != nil }

type handlerStartKey struct{}

// OnHandlerStart returns a copy of ctx under which start is called once,
// just before the capability's handler runs: after lookup, input
// validation, the authorize callback and the application context have all
// passed. A transport uses it to tell a call that was refused (answered
// at once, with its error) from one that is running (which it may then
// detach, stream or answer as pending). A nil start returns ctx unchanged.
func OnHandlerStart(ctx context.Context, start func()) context.Context {
	if start == nil {
		return ctx
	}
	return context.WithValue(ctx, handlerStartKey{}, start)
}
