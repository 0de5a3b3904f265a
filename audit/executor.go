package audit

import (
	"context"

	"github.com/agentcap/agentcap/core"
)

// ForExecutor returns the writer of an executor's audit trail
// (core.Config.Audit.Writer) that writes each record to s. An
// executor's records never hold raw arguments: only their digest, and
// for capabilities defined WithAuditArguments the decoded input with
// its secret fields redacted.
func ForExecutor(s Sink) core.AuditWriter { return executorWriter{s} }

type executorWriter struct{ s Sink }

// WriteAudit implements core.AuditWriter.
func (w executorWriter) WriteAudit(ctx context.Context, r core.AuditRecord) error {
	return w.s.Write(ctx, Record{
		Time:            r.Time,
		Event:           r.Event,
		Outcome:         r.Outcome,
		AgentID:         r.AgentID,
		HostID:          r.HostID,
		UserID:          r.UserID,
		Capability:      r.Capability,
		ArgumentsDigest: r.ArgumentsDigest,
		ConfirmationID:  r.ConfirmationID,
		RequestID:       r.RequestID,
		TraceID:         r.TraceID,
		ClientIP:        r.ClientIP,
		Duration:        r.Duration,
		Arguments:       r.Arguments,
	})
}
