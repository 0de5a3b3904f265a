package core

import "context"

// Progress is one report of how far a running capability has come.
// Progress increases from one report to the next; Total is the amount of
// work expected, or zero when it is not known; Message is a short text a
// person may read.
type Progress struct {
	Progress float64
	Total    float64
	Message  string
}

// ProgressFunc receives the progress reports of one call. A transport
// installs one with [WithProgress] and forwards the reports in its own
// terms (notifications, job status, stream events).
type ProgressFunc func(Progress)

type progressKey struct{}

// WithProgress returns a copy of ctx under which [ReportProgress] calls
// reach report. Pass that context to the executor; the handler's context
// derives from it. A nil report returns ctx unchanged.
func WithProgress(ctx context.Context, report ProgressFunc) context.Context {
	if report == nil {
		return ctx
	}
	return context.WithValue(ctx, progressKey{}, report)
}

// ReportProgress tells whoever follows the current call how far it has
// come. It does nothing when no transport listens, so a handler may call it
// unconditionally. Reports are best effort: a transport may drop or merge
// them, and a panic in the listener is not the handler's concern (it is
// recovered and the report dropped).
func ReportProgress(ctx context.Context, p Progress) {
	report, _ := ctx.Value(progressKey{}).(ProgressFunc)
	if report == nil {
		return
	}
	defer func() { _ = recover() }()
	report(p)
}
