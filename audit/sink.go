package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// ErrDuplicateID is returned by Write for a record whose id is taken.
var ErrDuplicateID = errors.New("audit: duplicate record id")

func errDuplicateID(id string) error { return fmt.Errorf("%w %q", ErrDuplicateID, id) }

// SlogSink writes each record as one structured log line. It keeps
// nothing: pair it with a Store (see Tee) to query the trail.
type SlogSink struct {
	logger *slog.Logger
	level  slog.Level
	now    func() time.Time
}

// NewSlogSink returns a sink logging records at level, with the message
// "audit" and one attribute per non-empty field. Arguments, when a
// capability keeps them, are logged as their (redacted) JSON text.
func NewSlogSink(logger *slog.Logger, level slog.Level) *SlogSink {
	if logger == nil {
		logger = slog.Default()
	}
	return &SlogSink{logger: logger, level: level, now: time.Now}
}

// Write implements Sink.
func (s *SlogSink) Write(ctx context.Context, r Record) error {
	r, err := Prepare(r, s.now())
	if err != nil {
		return err
	}
	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs, slog.String("id", r.ID), slog.Time("time", r.Time),
		slog.String("event", r.Event), slog.String("outcome", r.Outcome))
	for _, f := range []struct{ k, v string }{
		{"agent_id", r.AgentID}, {"host_id", r.HostID}, {"user_id", r.UserID},
		{"capability", r.Capability}, {"arguments_sha256", r.ArgumentsDigest},
		{"confirmation_id", r.ConfirmationID}, {"request_id", r.RequestID},
		{"trace_id", r.TraceID}, {"client_ip", r.ClientIP}, {"detail", r.Detail},
	} {
		if f.v != "" {
			attrs = append(attrs, slog.String(f.k, f.v))
		}
	}
	if r.Duration != 0 {
		attrs = append(attrs, slog.Duration("duration", r.Duration))
	}
	if r.Arguments != nil {
		attrs = append(attrs, slog.String("arguments", string(r.Arguments)))
	}
	s.logger.LogAttrs(ctx, s.level, "audit", slog.Group("audit", attrsAny(attrs)...))
	return nil
}

func attrsAny(attrs []slog.Attr) []any {
	out := make([]any, len(attrs))
	for i, a := range attrs {
		out[i] = a
	}
	return out
}

// Tee returns a Sink writing every record to each of sinks, in order. The
// record gets its id and time first, so that every sink keeps the same
// ones. Write fails when any sink fails (after trying them all), so that a
// required audit is refused when its store is down even if a log took
// the record.
func Tee(sinks ...Sink) Sink { return tee(sinks) }

type tee []Sink

func (t tee) Write(ctx context.Context, r Record) error {
	r, err := Prepare(r, time.Now())
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range t {
		if err := s.Write(ctx, r); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
