package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/internal/jsonvalue"
	"github.com/agentcap/agentcap/internal/schema"
)

// defaultTimeout is the executor's per-capability timeout when the
// configuration leaves it at zero.
const defaultTimeout = 30 * time.Second

// Batch defaults.
const (
	defaultMaxBatch         = 50
	defaultBatchConcurrency = 20
)

// Config configures an executor. Every field has a usable zero value.
type Config struct {
	// Timeout bounds each execution unless the capability sets its own.
	// Zero means 15 minutes; a negative value disables the default.
	Timeout time.Duration

	// Hooks observe every execution. See Hook.
	Hooks []Hook

	// Logger receives hook failures. Nil discards them.
	Logger *slog.Logger

	// TracerProvider and MeterProvider default to the global providers.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider

	// MaxBatch is the largest batch ExecuteBatch accepts (default 50).
	MaxBatch int
	// BatchConcurrency bounds how many items of one batch run at once
	// (default 20).
	BatchConcurrency int

	// Confirmation configures the single-use tokens that confirm calls of
	// risky capabilities. Its zero value confirms nothing.
	Confirmation ConfirmationConfig

	// Audit configures the audit trail of executions, previews and
	// confirmations. Its zero value writes none.
	Audit AuditConfig
}

// Executor runs capabilities from a registry through the pipeline lookup,
// input, authorize, context, audit, confirmation, handler, output. It is
// safe for concurrent use.
type Executor struct {
	reg         *Registry
	timeout     time.Duration
	hooks       []Hook
	logger      *slog.Logger
	tel         *telemetry
	maxBatch    int
	concurrency int
	confirm     *confirmation
	audit       *auditor
	// app runs the pipeline with the application context's own type, so
	// that the context is never boxed on its way to the handler.
	app pipeliner
}

// pipeliner is the typed part of an executor: an *appPipeline[C].
type pipeliner interface {
	pipeline(ctx context.Context, name string, id *auth.Identity, args []byte, typed *typedInput, preview *PreviewResult) (any, []byte, *agentcap.Error)
}

// appPipeline runs an executor's pipeline for application context C.
type appPipeline[C any] struct {
	e      *Executor
	create func(ctx context.Context, id *auth.Identity, def *Definition, input any) (C, error)
}

// NewExecutor builds an executor for the capabilities of reg. newContext
// builds the application context of each call, and is the security
// boundary between a verified identity (from package auth) and the
// application's own authorization state: it receives the validated input
// (the same value the handler will get) and must re-read roles, tenants
// and memberships from the application, never trust what the caller
// sent. Return an *agentcap.Error (or wrap ErrForbidden) to refuse the
// call; any other error is redacted. The identity is nil for an
// in-process call made without one.
//
// NewExecutor fails when the configuration is inconsistent or when a
// registered capability expects another application context than C.
func NewExecutor[C any](reg *Registry, newContext func(ctx context.Context, id *auth.Identity, def *Definition, input any) (C, error), cfg Config) (*Executor, error) {
	if reg == nil {
		return nil, errors.New("agentcap: executor: nil registry")
	}
	if newContext == nil {
		return nil, errors.New("agentcap: executor: nil context function")
	}
	appType := reflect.TypeFor[C]()
	for _, d := range reg.defs {
		if d.appType != appType {
			return nil, &DefinitionError{Capability: d.name,
				Reason: fmt.Sprintf("handler expects application context %v, the executor provides %v", d.appType, appType)}
		}
	}
	if cfg.MaxBatch < 0 || cfg.BatchConcurrency < 0 {
		return nil, errors.New("agentcap: executor: negative batch limits")
	}
	e := &Executor{
		reg:         reg,
		timeout:     cfg.Timeout,
		hooks:       slices.Clone(cfg.Hooks),
		logger:      cfg.Logger,
		maxBatch:    cfg.MaxBatch,
		concurrency: cfg.BatchConcurrency,
	}
	e.app = &appPipeline[C]{e: e, create: newContext}
	if e.timeout == 0 {
		e.timeout = defaultTimeout
	}
	if e.maxBatch == 0 {
		e.maxBatch = defaultMaxBatch
	}
	if e.concurrency == 0 {
		e.concurrency = defaultBatchConcurrency
	}
	confirm, err := newConfirmation(cfg.Confirmation, reg)
	if err != nil {
		return nil, err
	}
	e.confirm = confirm
	if e.audit, err = newAuditor(cfg.Audit, reg, cfg.MeterProvider, cfg.Logger); err != nil {
		return nil, err
	}
	if e.audit != nil && confirm != nil {
		confirm.confirmer = newAuditingConfirmer(confirm.confirmer)
	}
	tel, err := newTelemetry(cfg.TracerProvider, cfg.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("agentcap: executor: telemetry: %w", err)
	}
	e.tel = tel
	return e, nil
}

// MustExecutor is NewExecutor that panics on error, for programs whose
// executor is part of their start-up.
func MustExecutor[C any](reg *Registry, newContext func(ctx context.Context, id *auth.Identity, def *Definition, input any) (C, error), cfg Config) *Executor {
	e, err := NewExecutor(reg, newContext, cfg)
	if err != nil {
		panic(err)
	}
	return e
}

// IdentityContext is the context function of capabilities whose
// application context is the caller's verified identity itself, for
// applications with nothing of their own to look up per call:
//
//	exec, err := core.NewExecutor(reg, core.IdentityContext, core.Config{})
//
// with handlers of the form func(ctx, id *auth.Identity, in In) (Out,
// error). A call without an identity is refused (unauthorized), so a
// handler may read id without checking it. Applications with roles,
// tenants or memberships of their own write a context function that
// re-reads them instead.
func IdentityContext(_ context.Context, id *auth.Identity, _ *Definition, _ any) (*auth.Identity, error) {
	if id == nil {
		return nil, ErrForbidden
	}
	return id, nil
}

// Registry returns the executor's registry.
func (e *Executor) Registry() *Registry { return e.reg }

// MaxBatch returns the largest batch the executor accepts.
func (e *Executor) MaxBatch() int { return e.maxBatch }

// Invocation is one call as the executor runs it, from the input stage on.
type Invocation struct {
	Definition *Definition
	Identity   *auth.Identity
	// Arguments holds the raw top-level argument values exactly as the
	// caller sent them, before decoding. It is nil for typed calls.
	Arguments map[string]json.RawMessage
	// Input is the decoded, validated input value (the handler's In).
	Input any

	normOnce sync.Once
	norm     map[string]json.RawMessage
}

// Normalized returns the JSON encoding of a top-level field of the decoded
// input. Comparing it with Arguments shows whether decoding changed a value
// (for example a type whose UnmarshalJSON normalises case). The text is
// the value as encoding/json would write it, though string escapes may
// differ: compare JSON values, not bytes. The second result is false when
// the encoded input has no such field (an omitempty zero value, say).
func (inv *Invocation) Normalized(field string) (json.RawMessage, bool) {
	if data, ok, known := normalizedField(inv.Input, field); known {
		return data, ok
	}
	inv.normOnce.Do(func() {
		data, err := inv.Definition.encodeIn(inv.Input)
		if err != nil {
			return
		}
		if _, members, err := jsonvalue.ParseObject(data); err == nil {
			inv.norm = members
		}
	})
	v, ok := inv.norm[field]
	return v, ok
}

// authorize runs the identity's Authorizer for inv.
func (inv *Invocation) authorize(ctx context.Context) error {
	return inv.Identity.Authorizer.Authorize(ctx, &auth.Call{
		Capability:          inv.Definition.name,
		RequiredConstraints: inv.Definition.required,
		Units:               inv.Definition.units,
		Arguments:           inv.Arguments,
		Input:               inv.Input,
		Normalized:          inv.Normalized,
	})
}

// Execute runs the named capability for the caller id with raw JSON
// arguments, as a transport does. Absent or null arguments mean {}. A
// capability id may not see (see WithVisibility) is refused as an unknown
// one; the identity's Authorizer, when it has one, decides the call after
// input validation and before the context is built. The result is the
// validated output JSON; every error is an *agentcap.Error.
func (e *Executor) Execute(ctx context.Context, name string, id *auth.Identity, args []byte) (json.RawMessage, error) {
	_, data, err := e.app.pipeline(ctx, name, id, args, nil, nil)
	if err != nil {
		return nil, err
	}
	return data, nil
}

// Call runs a typed capability in process, through the same stages as
// Executor.Execute minus decoding: the input value is validated against
// the input schema (via its JSON encoding) and used as is. The capability
// must be registered with e. id may be nil for a call the program makes
// on its own behalf; the identity's Authorizer, when it has one, decides
// the call as it does for a transport.
func Call[C, In, Out any](ctx context.Context, e *Executor, c *Capability[C, In, Out], id *auth.Identity, in In) (Out, error) {
	var zero Out
	if c == nil {
		return zero, ErrUnknownCapability
	}
	if d, ok := e.reg.Lookup(c.def.name); !ok || d != c.def {
		return zero, ErrUnknownCapability
	}
	out, _, err := e.app.pipeline(ctx, c.def.name, id, nil, &typedInput{in}, nil)
	if err != nil {
		return zero, err
	}
	return out.(Out), nil
}

// msgUnknownCapability is the message of an unknown capability, and of
// one the caller may not see: the two cannot be told apart.
const msgUnknownCapability = "unknown capability"

// ErrUnknownCapability is the refusal of a call of an unknown capability,
// or of one the caller may not see.
var ErrUnknownCapability = &agentcap.Error{Code: agentcap.CodeCapabilityNotFound, Stage: agentcap.StageLookup, Message: msgUnknownCapability}

// typedInput marks an in-process call and carries its input value.
type typedInput struct{ v any }

// lookup finds the capability a caller runs, or previews (executing
// false: a preview is asked as a listing is, and runs nothing): an
// unknown name, and one the caller may not see, fail alike.
func (e *Executor) lookup(ctx context.Context, name string, id *auth.Identity, executing bool) (*Definition, bool) {
	def, ok := e.reg.byName[name]
	if !ok || !def.Visible(ctx, id, executing) {
		return nil, false
	}
	return def, true
}

// pipeline runs an execution, or a preview when preview is non-nil (which
// then receives the preview's confirmation, if one is issued). Exactly
// one of args and typed is used.
func (p *appPipeline[C]) pipeline(ctx context.Context, name string, id *auth.Identity, args []byte, typed *typedInput, preview *PreviewResult) (any, []byte, *agentcap.Error) {
	e := p.e
	start := time.Now()
	isPreview := preview != nil
	def, ok := e.lookup(ctx, name, id, preview == nil)
	if !ok {
		err := ErrUnknownCapability
		ctx, span := e.tel.start(ctx, nil, isPreview)
		took := time.Since(start)
		e.tel.finish(ctx, span, nil, took, err, isPreview)
		if len(e.hooks) > 0 {
			emit(ctx, e.hooks, e.logger, Event{Phase: PhaseError, Stage: agentcap.StageLookup, Capability: name,
				Identity: id, Duration: took, Err: err, Preview: isPreview})
		}
		return nil, nil, err
	}

	ctx, span := e.tel.start(ctx, def, isPreview)
	ctx, ac := e.auditBegin(ctx, def, id, args, typed, isPreview, start)
	if len(e.hooks) > 0 {
		emit(ctx, e.hooks, e.logger, Event{Phase: PhaseStart, Stage: agentcap.StageLookup, Capability: name,
			Definition: def, Identity: id, Preview: isPreview})
	}
	timeout := def.timeout
	// A preview is quick whatever its capability: the executor's default
	// bounds it.
	if timeout == 0 && (!def.longRunning() || isPreview) {
		timeout = e.timeout
	}
	// took is set when the execution finishes, before hooks run; the
	// deadline context ends with it, saving a read of the clock.
	var took time.Duration
	if timeout > 0 {
		dc := newDeadlineContext(ctx, start.Add(timeout))
		ctx = dc
		defer func() { dc.end(start.Add(took)) }()
	}

	var (
		in, out   any
		c         C
		data      []byte
		err       *agentcap.Error
		inputDone bool
		appDone   bool
	)
	fail := func(e2 *agentcap.Error) (any, []byte, *agentcap.Error) {
		took = time.Since(start)
		e.tel.finish(ctx, span, def, took, e2, isPreview)
		if ac != nil {
			ac.end(ctx, took, e2, in, inputDone)
		}
		if len(e.hooks) > 0 {
			ev := Event{Phase: PhaseError, Stage: e2.Stage, Capability: name, Definition: def,
				Identity: id, Duration: took, Err: e2, Preview: isPreview}
			if inputDone {
				ev.Input = in
			}
			if appDone {
				ev.App = c
			}
			emit(ctx, e.hooks, e.logger, ev)
		}
		return nil, nil, e2
	}

	// input
	authorizer := id != nil && id.Authorizer != nil
	var members map[string]json.RawMessage
	err = guard(agentcap.StageInput, func() *agentcap.Error {
		if typed != nil {
			in = typed.v
			return def.checkTyped(in)
		}
		var derr *agentcap.Error
		in, members, derr = def.decodeDynamic(args, authorizer)
		return derr
	})
	if err != nil {
		return fail(err)
	}
	inputDone = true

	// authorize
	if authorizer {
		inv := &Invocation{Definition: def, Identity: id, Arguments: members, Input: in}
		if err = classify(protect(func() error { return inv.authorize(ctx) }), agentcap.StageAuthorize, agentcap.CodeUnauthorized); err != nil {
			return fail(err)
		}
	}

	// context
	if cerr := ctx.Err(); cerr != nil {
		return fail(classify(cerr, agentcap.StageContext, agentcap.CodeInternalError))
	}
	perr := protect(func() error {
		var cerr error
		c, cerr = p.create(ctx, id, def, in)
		return cerr
	})
	if err = classify(perr, agentcap.StageContext, agentcap.CodeInternalError); err != nil {
		return fail(err)
	}
	appDone = true

	if isPreview {
		return p.finishPreview(ctx, span, start, &took, def, id, args, typed, c, in, preview, fail)
	}

	// audit
	if ac != nil && def.audit.required {
		if err = ac.started(ctx, in); err != nil {
			return fail(err)
		}
	}

	// confirmation
	if e.confirm != nil && e.confirm.needs[def] {
		if err = p.confirmCall(ctx, def, id, args, typed, c, in); err != nil {
			return fail(err)
		}
	}

	// handler
	if start, ok := ctx.Value(handlerStartKey{}).(func()); ok {
		start()
	}
	call := def.call.(func(context.Context, C, any) (any, error))
	perr = protect(func() error {
		var herr error
		out, herr = call(ctx, c, in)
		return herr
	})
	if err = classify(perr, agentcap.StageHandler, agentcap.CodeInternalError); err != nil {
		return fail(err)
	}

	// output
	err = guard(agentcap.StageOutput, func() *agentcap.Error {
		var oerr *agentcap.Error
		data, oerr = def.checkOutput(out)
		return oerr
	})
	if err != nil {
		return fail(err)
	}

	took = time.Since(start)
	e.tel.finish(ctx, span, def, took, nil, false)
	if ac != nil {
		ac.end(ctx, took, nil, in, true)
	}
	if len(e.hooks) > 0 {
		emit(ctx, e.hooks, e.logger, Event{Phase: PhaseEnd, Stage: agentcap.StageOutput, Capability: name, Definition: def,
			Identity: id, Duration: took, App: c, Input: in, Output: out, OutputJSON: data})
	}
	return out, data, nil
}

// finishPreview runs the preview stage of a preview, the validation of
// its result and, when the capability needs one, the issue of a
// confirmation.
func (p *appPipeline[C]) finishPreview(ctx context.Context, span trace.Span, start time.Time, took *time.Duration, def *Definition, id *auth.Identity, args []byte, typed *typedInput, c C, in any, res *PreviewResult, fail func(*agentcap.Error) (any, []byte, *agentcap.Error)) (any, []byte, *agentcap.Error) {
	e := p.e
	out, data, err := p.callPreview(ctx, def, c, in)
	if err != nil {
		return fail(err)
	}
	if e.confirm != nil && e.confirm.needs[def] {
		b, err := e.bindCall(def, id, args, typed)
		if err != nil {
			return fail(err)
		}
		// A token from a preview is the caller's own confirmation: a
		// call that a person must confirm gets none.
		if res.HumanConfirmation, err = needsHuman(ctx, def, c, in); err != nil {
			return fail(err)
		}
		if !res.HumanConfirmation {
			conf, ierr := e.confirm.confirmer.Issue(ctx, b)
			if ierr != nil {
				return fail(confirmerFailure(ierr, msgIssueUnavailable))
			}
			res.Confirmation = &conf
		}
	}
	*took = time.Since(start)
	e.tel.finish(ctx, span, def, *took, nil, true)
	if ac := auditCallFrom(ctx); ac != nil {
		ac.end(ctx, *took, nil, in, true)
	}
	if len(e.hooks) > 0 {
		emit(ctx, e.hooks, e.logger, Event{Phase: PhaseEnd, Stage: agentcap.StagePreview, Capability: def.name, Definition: def,
			Identity: id, Duration: *took, App: c, Input: in, Output: out, OutputJSON: data, Preview: true})
	}
	return out, data, nil
}

// callPreview runs the preview handler and validates its result.
func (p *appPipeline[C]) callPreview(ctx context.Context, def *Definition, c C, in any) (out any, data []byte, err *agentcap.Error) {
	call := def.preview.call.(func(context.Context, C, any) (any, error))
	perr := protect(func() error {
		var herr error
		out, herr = call(ctx, c, in)
		return herr
	})
	if err = classify(perr, agentcap.StagePreview, agentcap.CodeInternalError); err != nil {
		return nil, nil, err
	}
	err = guard(agentcap.StageOutput, func() *agentcap.Error {
		var oerr *agentcap.Error
		data, oerr = def.preview.check(out)
		return oerr
	})
	if err != nil {
		return nil, nil, err
	}
	return out, data, nil
}

// bindCall describes a call for its confirmation token: the raw
// arguments of a dynamic call, the encoded input of a typed one.
func (e *Executor) bindCall(def *Definition, id *auth.Identity, args []byte, typed *typedInput) (ConfirmationBinding, *agentcap.Error) {
	if typed != nil {
		var err error
		if args, err = def.encodeIn(typed.v); err != nil {
			return ConfirmationBinding{}, internalAt(agentcap.StageConfirmation, err)
		}
	}
	b, ok := e.confirm.binding(def, id, args)
	if !ok {
		return b, newErr(agentcap.CodeUnauthorized, agentcap.StageConfirmation, msgCannotConfirm, nil)
	}
	return b, nil
}

// confirmCall is the confirmation stage of an execution: the call's token
// is consumed, or, without one, the call is refused with
// CodeConfirmationRequired, carrying the preview (when the capability has
// one) and a fresh confirmation, so that the caller needs one more round
// trip only. A call that a person must confirm consumes only a token
// issued after a person's confirmation; without one, the person is asked
// and the call fails with CodeConfirmationPending.
func (p *appPipeline[C]) confirmCall(ctx context.Context, def *Definition, id *auth.Identity, args []byte, typed *typedInput, c C, in any) *agentcap.Error {
	e := p.e
	b, err := e.bindCall(def, id, args, typed)
	if err != nil {
		return err
	}
	if b.Human, err = needsHuman(ctx, def, c, in); err != nil {
		return err
	}
	if token := confirmationToken(ctx); token != "" {
		if cerr := e.confirm.confirmer.Consume(ctx, token, b); cerr != nil {
			return consumeError(cerr)
		}
		return nil
	}
	fields := make(map[string]any, 2)
	if def.preview != nil {
		_, data, perr := p.callPreview(ctx, def, c, in)
		if perr != nil {
			return perr
		}
		if b.Human {
			return e.confirm.askHuman(ctx, def, b, data)
		}
		fields["preview"] = json.RawMessage(data)
	}
	conf, ierr := e.confirm.confirmer.Issue(ctx, b)
	if ierr != nil {
		return confirmerFailure(ierr, msgIssueUnavailable)
	}
	fields["confirmation"] = ConfirmationJSON(conf)
	ce := newErr(agentcap.CodeConfirmationRequired, agentcap.StageConfirmation, msgConfirmationRequired, nil)
	ce.Fields = fields
	return ce
}

// decodeDynamic parses, validates and decodes raw arguments, once. It
// returns the decoded input and, when withMembers asks for them (for an
// authorize callback), the raw top-level members.
func (d *Definition) decodeDynamic(args []byte, withMembers bool) (any, map[string]json.RawMessage, *agentcap.Error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		trimmed = []byte("{}")
	}
	var (
		tree    any
		members map[string]json.RawMessage
		err     error
	)
	if withMembers {
		tree, members, err = jsonvalue.ParseObject(trimmed)
	} else {
		tree, err = parseObject(trimmed)
	}
	if err != nil {
		return nil, nil, invalidInput(err, parseViolation(err))
	}
	if violations := d.inValidator.Validate(tree); len(violations) > 0 {
		return nil, nil, invalidInput(nil, mergeViolations(violations, d.keys.Check(tree)))
	}
	if d.decodeTree != nil {
		// The decoder checks the keys as it goes.
		in, violations, err := d.decodeTree(tree)
		if len(violations) > 0 {
			return nil, nil, invalidInput(err, convertViolations(violations))
		}
		if err != nil {
			return nil, nil, invalidInput(err, []agentcap.Violation{{Message: "the arguments cannot be decoded"}})
		}
		return in, members, nil
	}
	if violations := d.keys.Check(tree); len(violations) > 0 {
		return nil, nil, invalidInput(nil, mergeViolations(nil, violations))
	}
	in, err := d.decode(trimmed)
	if err != nil {
		return nil, nil, invalidInput(err, decodeViolation(err))
	}
	return in, members, nil
}

// parseObject is jsonvalue.ParseObject without the members map, which
// costs a map per call and is only needed by authorize callbacks.
func parseObject(data []byte) (any, error) {
	tree, err := jsonvalue.Parse(data)
	if err != nil {
		return nil, err
	}
	got := ""
	switch tree.(type) {
	case map[string]any:
		return tree, nil
	case []any:
		got = "array"
	case string:
		got = "string"
	case json.Number:
		got = "number"
	case bool:
		got = "boolean"
	default:
		got = "null"
	}
	return nil, &jsonvalue.NotObjectError{Got: got}
}

// checkTyped validates a typed input through its JSON encoding.
func (d *Definition) checkTyped(in any) *agentcap.Error {
	data, err := d.encodeIn(in)
	if err != nil {
		return invalidInput(err, []agentcap.Violation{{Message: "the input cannot be encoded as JSON"}})
	}
	violations, err := d.inValidator.ValidateJSON(data)
	if err != nil {
		return invalidInput(err, parseViolation(err))
	}
	if len(violations) > 0 {
		return invalidInput(nil, convertViolations(violations))
	}
	return nil
}

// checkOutput encodes and validates the handler's result. The encoded text
// is validated as it stands, without a tree: it is exactly what a
// transport will send. Violations are kept in the hidden cause only. A
// result whose type implies its derived schema (a struct of plain scalar
// fields without keyword tags, see schema.ImpliedBy) is only encoded:
// validating it could not fail.
func (d *Definition) checkOutput(out any) ([]byte, *agentcap.Error) {
	data, err := d.encodeOut(out)
	if err != nil {
		return nil, internalAt(agentcap.StageOutput, fmt.Errorf("encoding the result: %w", err))
	}
	if d.outImplied {
		return data, nil
	}
	return validateResult(d.outValidator, data, "result")
}

// validateResult validates an encoded result (what names it in the hidden
// cause).
func validateResult(v *schema.Validator, data []byte, what string) ([]byte, *agentcap.Error) {
	violations, err := v.ValidateJSON(data)
	if err != nil {
		return nil, internalAt(agentcap.StageOutput, fmt.Errorf("re-reading the encoded %s: %w", what, err))
	}
	if len(violations) > 0 {
		parts := make([]string, len(violations))
		for i, v := range violations {
			parts[i] = fmt.Sprintf("%s: %s", pathOrRoot(v.Path), v.Message)
		}
		return nil, internalAt(agentcap.StageOutput, fmt.Errorf("the %s does not fit its schema: %s", what, strings.Join(parts, "; ")))
	}
	return data, nil
}

func pathOrRoot(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

func invalidInput(cause error, details []agentcap.Violation) *agentcap.Error {
	msg := "the arguments are invalid"
	if n := len(details); n > maxViolations {
		details = details[:maxViolations:maxViolations]
		msg = "the arguments are invalid (the first " + strconv.Itoa(maxViolations) + " of " + strconv.Itoa(n) + " violations are listed)"
	}
	e := newErr(agentcap.CodeInvalidRequest, agentcap.StageInput, msg, cause)
	e.Details = details
	return e
}

// maxViolations bounds the violations an invalid_input error lists, so
// that an error answer stays small whatever the arguments: input with
// thousands of unknown or wrong members gets the first maxViolations and
// a message giving the total.
const maxViolations = 50

// guard runs a stage of the executor's own that calls application code
// indirectly (UnmarshalJSON, MarshalJSON and TextMarshaler methods of the
// input and output types), turning a panic into a redacted failure of that
// stage.
func guard(stage agentcap.Stage, f func() *agentcap.Error) (err *agentcap.Error) {
	defer func() {
		if r := recover(); r != nil {
			err = internalAt(stage, &panicError{value: r, stack: debug.Stack()})
		}
	}()
	return f()
}

// protect runs f, turning a panic into an error that classify redacts.
func protect(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r, stack: debug.Stack()}
		}
	}()
	return f()
}
