package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/internal/jsoncanon"
	"github.com/agentcap/agentcap/internal/jsonvalue"
	"github.com/agentcap/agentcap/internal/schema"
)

// Audit event names the executor writes besides a capability's own (see
// [WithAuditEvent]). Package audit uses the same names.
const (
	// auditEventPreview: a preview ran.
	auditEventPreview = "preview"
	// auditEventConfirmationIssued: a confirmation token was issued for a
	// call, by a preview or by an execution refused with
	// confirmation_required.
	auditEventConfirmationIssued = "confirmation.issued"
	// auditEventConfirmationConsumed: a call spent its confirmation token.
	auditEventConfirmationConsumed = "confirmation.consumed"
	// auditEventConfirmationDenied: a confirmation token was refused; the
	// outcome is the refusal's code.
	auditEventConfirmationDenied = "confirmation.denied"
)

// Audit outcomes that are not error codes. A failed call's outcome is its
// error's Code.
const (
	// auditOutcomeOK: the call succeeded.
	auditOutcomeOK = "ok"
	// auditOutcomeStarted: the record written before the handler of a
	// capability defined WithAuditRequired runs.
	auditOutcomeStarted = "started"
)

// auditSecretTag is the struct tag, `audit:"secret"`, that marks an input
// field whose value an audit record never shows: the arguments kept for a
// capability defined WithAuditArguments have it replaced by
// auditRedacted, at any depth of the input.
const auditSecretTag = "audit"

// auditRedacted replaces the value of a secret field in kept arguments.
const auditRedacted = "[redacted]"

// metricAuditFailures counts the audit records an executor could not
// write, by capability and event.
const metricAuditFailures = "agentcap.audit.failures"

// attrAuditEvent is the event attribute of metricAuditFailures.
const attrAuditEvent = attribute.Key("agentcap.audit.event")

const msgAuditUnavailable = "the audit trail is unavailable: the call did not run; retry later"

// auditSpec is a capability's audit options.
type auditSpec struct {
	event     string
	required  bool
	arguments bool
	// redact replaces the secret fields of kept arguments; nil when the
	// input has none.
	redact *schema.Redaction
}

// WithAuditEvent names the event of the audit records of the
// capability's executions. The default is the capability's name. It
// follows the rules of capability names.
func WithAuditEvent(name string) Option { return func(o *options) { o.audit.event = name } }

// WithAuditRequired makes an audit trail a condition of the capability's
// executions: the executor writes a record of the call's start (outcome
// auditOutcomeStarted) before the confirmation stage and the handler, and
// refuses the call with audit_unavailable (503) when it cannot. The
// executor must have an audit writer (Config.Audit). Without
// this option, and for previews, a record that cannot be written is
// counted (metricAuditFailures) and logged, and the call goes on.
func WithAuditRequired() Option { return func(o *options) { o.audit.required = true } }

// WithAuditArguments keeps the call's arguments in its audit records
// (AuditRecord.Arguments): the decoded input as JSON, every field tagged
// `audit:"secret"` replaced by auditRedacted. Without it a record only
// holds the SHA-256 digest of the arguments.
func WithAuditArguments() Option { return func(o *options) { o.audit.arguments = true } }

// build checks the audit options of d and prepares its redaction.
func (a *auditSpec) build(d *Definition) error {
	if a.event == "" {
		a.event = d.name
	}
	if len(a.event) > maxNameLength || !namePattern.MatchString(a.event) {
		return fmt.Errorf("invalid audit event %q: use lower-case letters, digits and underscores, optionally in dotted segments", a.event)
	}
	if a.arguments {
		a.redact = schema.NewRedaction(d.inType, func(f reflect.StructField) bool {
			return f.Tag.Get(auditSecretTag) == "secret"
		})
	}
	return nil
}

// AuditRecord is one entry of the audit trail as the executor reports it.
// It never holds the raw arguments.
type AuditRecord struct {
	// Time is when the call started.
	Time time.Time
	// Event is the capability's audit event, auditEventPreview or an
	// AuditEventConfirmation name.
	Event string
	// Outcome is auditOutcomeOK, auditOutcomeStarted or an error code.
	Outcome string
	// Capability is the capability's name.
	Capability string
	// AgentID, HostID and UserID name who acted: the caller's identity
	// (auth.Identity), "" where it names none.
	AgentID, HostID, UserID string
	// ArgumentsDigest is the hex SHA-256 of the canonical form of the
	// arguments (see package idempotency): the raw arguments of a
	// transport's call, the encoded input of a typed one.
	ArgumentsDigest string
	// Arguments holds the decoded input as JSON, secret fields redacted,
	// for capabilities defined WithAuditArguments whose input was valid;
	// nil otherwise. It must not be modified.
	Arguments json.RawMessage
	// ConfirmationID names the confirmation token the call was issued or
	// spent, when the Confirmer names its tokens (ConfirmationNamer).
	ConfirmationID string
	// RequestID and ClientIP come from the transport (WithRequestInfo);
	// TraceID is the OpenTelemetry trace of the call.
	RequestID, ClientIP, TraceID string
	// Duration is how long the call took; zero for start records and
	// confirmation records.
	Duration time.Duration
}

// AuditWriter receives an executor's audit records. WriteAudit must be
// safe for concurrent use; an error means the record was not kept.
// Package audit adapts its sinks (audit.ForExecutor).
type AuditWriter interface {
	WriteAudit(ctx context.Context, r AuditRecord) error
}

// defaultAuditTimeout bounds an audit write when AuditConfig.Timeout is
// zero.
const defaultAuditTimeout = 5 * time.Second

// AuditConfig configures an executor's audit trail. The zero value writes
// nothing.
type AuditConfig struct {
	// Writer receives a record of every execution and preview of a
	// registered capability, and of every confirmation issued, spent or
	// refused. Calls of unknown capabilities are not recorded (their
	// names are the caller's). Nil: no audit trail, and NewExecutor
	// refuses a registry holding a capability defined WithAuditRequired.
	Writer AuditWriter
	// Timeout bounds each write (default 5 s). Writes do
	// not end with the call's context: a record of a canceled call is
	// still written.
	Timeout time.Duration
}

// ConfirmationNamer is implemented by Confirmers whose tokens have ids
// (package confirm's Manager): the audit records of a spent or refused
// token then carry its id.
type ConfirmationNamer interface {
	ConfirmationID(token string) string
}

// RequestInfo describes the transport request of a call, for its audit
// records.
type RequestInfo struct {
	// ID identifies the request (its X-Request-Id, say).
	ID string
	// ClientIP is the caller's address.
	ClientIP string
}

type requestInfoKey struct{}

// WithRequestInfo returns a copy of ctx carrying the transport request of
// the calls run under it.
func WithRequestInfo(ctx context.Context, info RequestInfo) context.Context {
	return context.WithValue(ctx, requestInfoKey{}, info)
}

// RequestInfoFrom returns the request info ctx carries.
func RequestInfoFrom(ctx context.Context) (RequestInfo, bool) {
	info, ok := ctx.Value(requestInfoKey{}).(RequestInfo)
	return info, ok
}

// Audits reports whether the executor writes an audit trail. A transport
// skips the work of WithRequestInfo when it does not.
func (e *Executor) Audits() bool { return e.audit != nil }

// auditor is an executor's checked AuditConfig.
type auditor struct {
	w        AuditWriter
	timeout  time.Duration
	failures metric.Int64Counter
	logger   *slog.Logger
}

func newAuditor(cfg AuditConfig, reg *Registry, mp metric.MeterProvider, logger *slog.Logger) (*auditor, error) {
	if cfg.Writer == nil {
		for _, d := range reg.defs {
			if d.audit.required {
				return nil, &DefinitionError{Capability: d.name,
					Reason: "it requires an audit trail: set Config.Audit.Writer"}
			}
		}
		return nil, nil
	}
	if cfg.Timeout < 0 {
		return nil, errors.New("agentcap: executor: negative Audit.Timeout")
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	failures, err := mp.Meter(instrumentationName).Int64Counter(metricAuditFailures,
		metric.WithDescription("Audit records that could not be written, by capability and event."),
		metric.WithUnit("{record}"))
	if err != nil {
		return nil, fmt.Errorf("agentcap: executor: telemetry: %w", err)
	}
	a := &auditor{w: cfg.Writer, timeout: cfg.Timeout, failures: failures, logger: logger}
	if a.timeout == 0 {
		a.timeout = defaultAuditTimeout
	}
	if a.logger == nil {
		a.logger = slog.New(slog.DiscardHandler)
	}
	return a, nil
}

// write writes r, counting and logging a failure.
func (w *auditor) write(ctx context.Context, def *Definition, r AuditRecord) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.timeout)
	err := protect(func() error { return w.w.WriteAudit(wctx, r) })
	cancel()
	if err != nil {
		w.failures.Add(ctx, 1, metric.WithAttributes(def.tel.capability, attrAuditEvent.String(r.Event)))
		w.logger.LogAttrs(ctx, slog.LevelError, "agentcap: audit record not written",
			slog.String("capability", def.name), slog.String("event", r.Event),
			slog.String("outcome", r.Outcome), slog.String("error", err.Error()))
	}
	return err
}

// auditCall is the audit state of one call: the fields its records
// share.
type auditCall struct {
	w       *auditor
	def     *Definition
	preview bool
	rec     AuditRecord
	// kept is set once rec.Arguments was computed.
	kept bool
}

type auditCallKey struct{}

func auditCallFrom(ctx context.Context) *auditCall {
	ac, _ := ctx.Value(auditCallKey{}).(*auditCall)
	return ac
}

// auditBegin starts the audit state of a call and returns ctx carrying
// it; nil without an audit trail.
func (e *Executor) auditBegin(ctx context.Context, def *Definition, id *auth.Identity, args []byte, typed *typedInput, preview bool, start time.Time) (context.Context, *auditCall) {
	if e.audit == nil {
		return ctx, nil
	}
	ac := &auditCall{w: e.audit, def: def, preview: preview, rec: AuditRecord{
		Time:       start,
		Capability: def.name,
	}}
	if id != nil {
		ac.rec.AgentID, ac.rec.HostID, ac.rec.UserID = id.AgentID, id.HostID, id.UserID
	}
	if typed != nil {
		_ = protect(func() error {
			data, err := def.encodeIn(typed.v)
			args = data
			return err
		})
	}
	ac.rec.ArgumentsDigest = jsoncanon.Digest(args)
	if info, ok := RequestInfoFrom(ctx); ok {
		ac.rec.RequestID, ac.rec.ClientIP = info.ID, info.ClientIP
	}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		ac.rec.TraceID = sc.TraceID().String()
	}
	return context.WithValue(ctx, auditCallKey{}, ac), ac
}

// keep fills the kept arguments from the decoded input, once, for a
// capability defined WithAuditArguments.
func (ac *auditCall) keep(in any) {
	if ac.kept || !ac.def.audit.arguments {
		return
	}
	ac.kept = true
	// Encoding runs the input's own MarshalJSON methods: a panic there
	// leaves the record without arguments.
	_ = protect(func() error {
		data, err := ac.def.encodeIn(in)
		if err != nil {
			return err
		}
		if r := ac.def.audit.redact; r != nil {
			tree, err := jsonvalue.Parse(data)
			if err != nil {
				return err
			}
			r.Apply(tree, auditRedacted)
			data = jsonvalue.Append(nil, tree)
		}
		ac.rec.Arguments = data
		return nil
	})
}

// started writes the record of a call's start, for a capability defined
// WithAuditRequired; the call must not run when it fails.
func (ac *auditCall) started(ctx context.Context, in any) *agentcap.Error {
	ac.keep(in)
	r := ac.rec
	r.Event, r.Outcome = ac.def.audit.event, auditOutcomeStarted
	if err := ac.w.write(ctx, ac.def, r); err != nil {
		return newErr(agentcap.CodeAuditUnavailable, agentcap.StageAudit, msgAuditUnavailable, err)
	}
	return nil
}

// end writes the record of a call's end. in is the decoded input, nil
// when the input stage failed.
func (ac *auditCall) end(ctx context.Context, took time.Duration, err *agentcap.Error, in any, inputDone bool) {
	if inputDone {
		ac.keep(in)
	}
	r := ac.rec
	r.Event, r.Outcome, r.Duration = ac.def.audit.event, auditOutcomeOK, took
	if ac.preview {
		r.Event = auditEventPreview
	}
	if err != nil {
		r.Outcome = string(err.Code)
	}
	_ = ac.w.write(ctx, ac.def, r)
}

// confirmation writes the record of a confirmation issued, spent or
// refused.
func (ac *auditCall) confirmation(ctx context.Context, event, outcome string) {
	r := ac.rec
	r.Event, r.Outcome = event, outcome
	_ = ac.w.write(ctx, ac.def, r)
}

// auditingConfirmer records the confirmations of the calls it serves.
type auditingConfirmer struct {
	Confirmer
	namer ConfirmationNamer
}

func newAuditingConfirmer(c Confirmer) auditingConfirmer {
	namer, _ := c.(ConfirmationNamer)
	return auditingConfirmer{Confirmer: c, namer: namer}
}

// Issue implements Confirmer.
func (a auditingConfirmer) Issue(ctx context.Context, b ConfirmationBinding) (Confirmation, error) {
	c, err := a.Confirmer.Issue(ctx, b)
	if ac := auditCallFrom(ctx); ac != nil && err == nil {
		ac.rec.ConfirmationID = c.ID
		ac.confirmation(ctx, auditEventConfirmationIssued, auditOutcomeOK)
	}
	return c, err
}

// Consume implements Confirmer.
func (a auditingConfirmer) Consume(ctx context.Context, token string, b ConfirmationBinding) error {
	err := a.Confirmer.Consume(ctx, token, b)
	if ac := auditCallFrom(ctx); ac != nil {
		if a.namer != nil {
			ac.rec.ConfirmationID = a.namer.ConfirmationID(token)
		}
		switch {
		case err == nil:
			ac.confirmation(ctx, auditEventConfirmationConsumed, auditOutcomeOK)
		case errors.Is(err, ErrConfirmationInvalid) || errors.Is(err, ErrConfirmationUsed) ||
			errors.Is(err, ErrConfirmationExpired) || errors.Is(err, ErrConfirmationMismatch):
			// A failure of the Confirmer itself is the call's outcome,
			// not a refusal.
			ac.confirmation(ctx, auditEventConfirmationDenied, string(consumeError(err).Code))
		}
	}
	return err
}
