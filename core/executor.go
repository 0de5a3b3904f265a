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

	"github.com/agentcap/agentcap/internal/jsonvalue"
	"github.com/agentcap/agentcap/internal/schema"
)

// DefaultTimeout is the executor's per-capability timeout when the
// configuration leaves it at zero.
const DefaultTimeout = 30 * time.Second

// Batch defaults.
const (
	DefaultMaxBatch         = 50
	DefaultBatchConcurrency = 20
)

// ExecutorConfig configures an executor. C is the application context type
// and P the verified principal type. Only CreateContext is required.
type ExecutorConfig[C, P any] struct {
	// CreateContext is the security boundary between a verified transport
	// identity and the application's own authorization state. It receives
	// the validated input (the same value the handler will get) and must
	// re-read roles, tenants and memberships from the application, never
	// trust what the caller sent. Return an *AppError (or wrap ErrForbidden)
	// to refuse the call; any other error is redacted.
	CreateContext func(ctx context.Context, principal P, def *Definition, input any) (C, error)

	// Timeout bounds each execution unless the capability sets its own.
	// Zero means DefaultTimeout; a negative value disables the default.
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
	Confirmation ConfirmationConfig[P]

	// Audit configures the audit trail of executions, previews and
	// confirmations. Its zero value writes none.
	Audit AuditConfig[P]
}

// Executor runs capabilities from a registry through the pipeline lookup,
// input, authorize, context, audit, confirmation, handler, output. It is safe for
// concurrent use.
type Executor[C, P any] struct {
	reg         *Registry
	create      func(ctx context.Context, principal P, def *Definition, input any) (C, error)
	timeout     time.Duration
	hooks       []Hook
	logger      *slog.Logger
	tel         *telemetry
	maxBatch    int
	concurrency int
	confirm     *confirmation[P]
	audit       *auditor[P]
}

// NewExecutor builds an executor. It fails when the configuration is
// incomplete or when a registered capability expects another application
// context type than C.
func NewExecutor[C, P any](reg *Registry, cfg ExecutorConfig[C, P]) (*Executor[C, P], error) {
	if reg == nil {
		return nil, errors.New("agentcap: executor: nil registry")
	}
	if cfg.CreateContext == nil {
		return nil, errors.New("agentcap: executor: CreateContext is required")
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
	e := &Executor[C, P]{
		reg:         reg,
		create:      cfg.CreateContext,
		timeout:     cfg.Timeout,
		hooks:       slices.Clone(cfg.Hooks),
		logger:      cfg.Logger,
		maxBatch:    cfg.MaxBatch,
		concurrency: cfg.BatchConcurrency,
	}
	if e.timeout == 0 {
		e.timeout = DefaultTimeout
	}
	if e.maxBatch == 0 {
		e.maxBatch = DefaultMaxBatch
	}
	if e.concurrency == 0 {
		e.concurrency = DefaultBatchConcurrency
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

// MustExecutor is NewExecutor for package-level variables: it panics on
// error.
func MustExecutor[C, P any](reg *Registry, cfg ExecutorConfig[C, P]) *Executor[C, P] {
	e, err := NewExecutor(reg, cfg)
	if err != nil {
		panic(err)
	}
	return e
}

// Registry returns the executor's registry.
func (e *Executor[C, P]) Registry() *Registry { return e.reg }

// MaxBatch returns the largest batch the executor accepts.
func (e *Executor[C, P]) MaxBatch() int { return e.maxBatch }

// Visible returns the definitions principal may see, in name order.
func (e *Executor[C, P]) Visible(ctx context.Context, principal P) []*Definition {
	out := make([]*Definition, 0, len(e.reg.defs))
	for _, d := range e.reg.defs {
		if d.Visible(ctx, principal) {
			out = append(out, d)
		}
	}
	return out
}

// Describe returns the named definition if principal may see it.
func (e *Executor[C, P]) Describe(ctx context.Context, principal P, name string) (*Definition, bool) {
	d, ok := e.reg.Lookup(name)
	if !ok || !d.Visible(ctx, principal) {
		return nil, false
	}
	return d, true
}

// AuthorizeFunc decides, before any application context is built, whether
// an invocation may run. It sees the exact parsed input that will then go
// to the context resolver and the handler. Returning an *AppError refuses
// with that error; any other error refuses with CodeForbidden.
type AuthorizeFunc func(ctx context.Context, inv *Invocation) error

// Invocation is one call as the authorize step sees it.
type Invocation struct {
	Definition *Definition
	Principal  any
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

// ExecuteDynamic runs the named capability for principal with raw JSON
// arguments, as a transport does. Absent or null arguments mean {}. The
// optional authorize callback runs after input validation and before the
// context is built. The result is the validated output JSON; every error is
// an *Error.
func (e *Executor[C, P]) ExecuteDynamic(ctx context.Context, name string, principal P, args []byte, authorize AuthorizeFunc) (json.RawMessage, error) {
	_, data, err := e.run(ctx, name, principal, args, nil, authorize)
	if err != nil {
		return nil, err
	}
	return data, nil
}

// Execute runs a typed capability in process, through the same stages as
// ExecuteDynamic minus decoding: the input value is validated against the
// input schema (via its JSON encoding) and used as is. The capability must
// be registered with e.
func Execute[C, P, In, Out any](ctx context.Context, e *Executor[C, P], c *Capability[C, In, Out], principal P, in In) (Out, error) {
	var zero Out
	if c == nil {
		return zero, &Error{Code: CodeUnknownCapability, Stage: StageLookup, Message: "unknown capability"}
	}
	if d, ok := e.reg.Lookup(c.def.name); !ok || d != c.def {
		return zero, &Error{Code: CodeUnknownCapability, Stage: StageLookup, Message: "unknown capability"}
	}
	out, _, err := e.run(ctx, c.def.name, principal, nil, &typedInput{in}, nil)
	if err != nil {
		return zero, err
	}
	return out.(Out), nil
}

// typedInput marks an in-process call and carries its input value.
type typedInput struct{ v any }

// run is the pipeline of an execution. Exactly one of args and typed is
// used.
func (e *Executor[C, P]) run(ctx context.Context, name string, principal P, args []byte, typed *typedInput, authorize AuthorizeFunc) (any, []byte, *Error) {
	return e.pipeline(ctx, name, principal, args, typed, authorize, nil)
}

// pipeline runs an execution, or a preview when preview is non-nil (which
// then receives the preview's confirmation, if one is issued).
func (e *Executor[C, P]) pipeline(ctx context.Context, name string, principal P, args []byte, typed *typedInput, authorize AuthorizeFunc, preview *PreviewResult) (any, []byte, *Error) {
	start := time.Now()
	isPreview := preview != nil
	def, ok := e.reg.byName[name]
	if !ok {
		err := &Error{Code: CodeUnknownCapability, Stage: StageLookup, Message: "unknown capability"}
		ctx, span := e.tel.start(ctx, nil, isPreview)
		took := time.Since(start)
		e.tel.finish(ctx, span, nil, took, err, isPreview)
		if len(e.hooks) > 0 {
			emit(ctx, e.hooks, e.logger, Event{Phase: PhaseError, Stage: StageLookup, Capability: name,
				Principal: principal, Duration: took, Err: err, Preview: isPreview})
		}
		return nil, nil, err
	}

	ctx, span := e.tel.start(ctx, def, isPreview)
	ctx, ac := e.auditBegin(ctx, def, principal, args, typed, isPreview, start)
	if len(e.hooks) > 0 {
		emit(ctx, e.hooks, e.logger, Event{Phase: PhaseStart, Stage: StageLookup, Capability: name,
			Definition: def, Principal: principal, Preview: isPreview})
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
		err       *Error
		inputDone bool
		appDone   bool
	)
	fail := func(e2 *Error) (any, []byte, *Error) {
		took = time.Since(start)
		e.tel.finish(ctx, span, def, took, e2, isPreview)
		if ac != nil {
			ac.end(ctx, took, e2, in, inputDone)
		}
		if len(e.hooks) > 0 {
			ev := Event{Phase: PhaseError, Stage: e2.Stage, Capability: name, Definition: def,
				Principal: principal, Duration: took, Err: e2, Preview: isPreview}
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
	var members map[string]json.RawMessage
	err = guard(StageInput, func() *Error {
		if typed != nil {
			in = typed.v
			return def.checkTyped(in)
		}
		var derr *Error
		in, members, derr = def.decodeDynamic(args, authorize != nil)
		return derr
	})
	if err != nil {
		return fail(err)
	}
	inputDone = true

	// authorize
	if authorize != nil {
		inv := &Invocation{Definition: def, Principal: principal, Arguments: members, Input: in}
		if err = classify(protect(func() error { return authorize(ctx, inv) }), StageAuthorize, CodeForbidden); err != nil {
			return fail(err)
		}
	}

	// context
	if cerr := ctx.Err(); cerr != nil {
		return fail(classify(cerr, StageContext, CodeExecutionFailed))
	}
	perr := protect(func() error {
		var cerr error
		c, cerr = e.create(ctx, principal, def, in)
		return cerr
	})
	if err = classify(perr, StageContext, CodeExecutionFailed); err != nil {
		return fail(err)
	}
	appDone = true

	if isPreview {
		return e.finishPreview(ctx, span, start, &took, def, principal, args, typed, c, in, preview, fail)
	}

	// audit
	if ac != nil && def.audit.required {
		if err = ac.started(ctx, in); err != nil {
			return fail(err)
		}
	}

	// confirmation
	if e.confirm != nil && e.confirm.needs[def] {
		if err = e.confirmCall(ctx, def, principal, args, typed, c, in); err != nil {
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
	if err = classify(perr, StageHandler, CodeExecutionFailed); err != nil {
		return fail(err)
	}

	// output
	err = guard(StageOutput, func() *Error {
		var oerr *Error
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
		emit(ctx, e.hooks, e.logger, Event{Phase: PhaseEnd, Stage: StageOutput, Capability: name, Definition: def,
			Principal: principal, Duration: took, App: c, Input: in, Output: out, OutputJSON: data})
	}
	return out, data, nil
}

// finishPreview runs the preview stage of a preview, the validation of
// its result and, when the capability needs one, the issue of a
// confirmation.
func (e *Executor[C, P]) finishPreview(ctx context.Context, span trace.Span, start time.Time, took *time.Duration, def *Definition, principal P, args []byte, typed *typedInput, c C, in any, res *PreviewResult, fail func(*Error) (any, []byte, *Error)) (any, []byte, *Error) {
	out, data, err := e.callPreview(ctx, def, c, in)
	if err != nil {
		return fail(err)
	}
	if e.confirm != nil && e.confirm.needs[def] {
		b, err := e.bindCall(def, principal, args, typed)
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
		emit(ctx, e.hooks, e.logger, Event{Phase: PhaseEnd, Stage: StagePreview, Capability: def.name, Definition: def,
			Principal: principal, Duration: *took, App: c, Input: in, Output: out, OutputJSON: data, Preview: true})
	}
	return out, data, nil
}

// callPreview runs the preview handler and validates its result.
func (e *Executor[C, P]) callPreview(ctx context.Context, def *Definition, c C, in any) (out any, data []byte, err *Error) {
	call := def.preview.call.(func(context.Context, C, any) (any, error))
	perr := protect(func() error {
		var herr error
		out, herr = call(ctx, c, in)
		return herr
	})
	if err = classify(perr, StagePreview, CodeExecutionFailed); err != nil {
		return nil, nil, err
	}
	err = guard(StageOutput, func() *Error {
		var oerr *Error
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
func (e *Executor[C, P]) bindCall(def *Definition, principal P, args []byte, typed *typedInput) (ConfirmationBinding, *Error) {
	if typed != nil {
		var err error
		if args, err = def.encodeIn(typed.v); err != nil {
			return ConfirmationBinding{}, &Error{Code: CodeExecutionFailed, Stage: StageConfirmation, Message: msgInternal, cause: err}
		}
	}
	b, ok := e.confirm.binding(def, principal, args)
	if !ok {
		return b, &Error{Code: CodeForbidden, Stage: StageConfirmation, Message: msgCannotConfirm}
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
func (e *Executor[C, P]) confirmCall(ctx context.Context, def *Definition, principal P, args []byte, typed *typedInput, c C, in any) *Error {
	b, err := e.bindCall(def, principal, args, typed)
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
		_, data, perr := e.callPreview(ctx, def, c, in)
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
	return &Error{Code: CodeConfirmationRequired, Stage: StageConfirmation, Message: msgConfirmationRequired, fields: fields}
}

// decodeDynamic parses, validates and decodes raw arguments, once. It
// returns the decoded input and, when withMembers asks for them (for an
// authorize callback), the raw top-level members.
func (d *Definition) decodeDynamic(args []byte, withMembers bool) (any, map[string]json.RawMessage, *Error) {
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
			return nil, nil, invalidInput(err, []Violation{{Message: "the arguments cannot be decoded"}})
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
func (d *Definition) checkTyped(in any) *Error {
	data, err := d.encodeIn(in)
	if err != nil {
		return invalidInput(err, []Violation{{Message: "the input cannot be encoded as JSON"}})
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
func (d *Definition) checkOutput(out any) ([]byte, *Error) {
	data, err := d.encodeOut(out)
	if err != nil {
		return nil, &Error{Code: CodeInvalidOutput, Stage: StageOutput, Message: msgInternal,
			cause: fmt.Errorf("encoding the result: %w", err)}
	}
	if d.outImplied {
		return data, nil
	}
	return validateResult(d.outValidator, data, "result")
}

// validateResult validates an encoded result (what names it in the hidden
// cause).
func validateResult(v *schema.Validator, data []byte, what string) ([]byte, *Error) {
	violations, err := v.ValidateJSON(data)
	if err != nil {
		return nil, &Error{Code: CodeInvalidOutput, Stage: StageOutput, Message: msgInternal,
			cause: fmt.Errorf("re-reading the encoded %s: %w", what, err)}
	}
	if len(violations) > 0 {
		parts := make([]string, len(violations))
		for i, v := range violations {
			parts[i] = fmt.Sprintf("%s: %s", pathOrRoot(v.Path), v.Message)
		}
		return nil, &Error{Code: CodeInvalidOutput, Stage: StageOutput, Message: msgInternal,
			cause: fmt.Errorf("the %s does not fit its schema: %s", what, strings.Join(parts, "; "))}
	}
	return data, nil
}

func pathOrRoot(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

func invalidInput(cause error, details []Violation) *Error {
	msg := "the arguments are invalid"
	if n := len(details); n > MaxViolations {
		details = details[:MaxViolations:MaxViolations]
		msg = "the arguments are invalid (the first " + strconv.Itoa(MaxViolations) + " of " + strconv.Itoa(n) + " violations are listed)"
	}
	return &Error{Code: CodeInvalidInput, Stage: StageInput, Message: msg, Details: details, cause: cause}
}

// MaxViolations bounds the violations an invalid_input error lists, so
// that an error answer stays small whatever the arguments: input with
// thousands of unknown or wrong members gets the first MaxViolations and
// a message giving the total.
const MaxViolations = 50

// guard runs a stage of the executor's own that calls application code
// indirectly (UnmarshalJSON, MarshalJSON and TextMarshaler methods of the
// input and output types), turning a panic into a redacted failure of that
// stage.
func guard(stage Stage, f func() *Error) (err *Error) {
	defer func() {
		if r := recover(); r != nil {
			err = &Error{Code: CodeExecutionFailed, Stage: stage, Message: msgInternal,
				cause: &panicError{value: r, stack: debug.Stack()}}
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

// panicError is the hidden cause of a recovered panic.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v\n%s", p.value, p.stack) }
