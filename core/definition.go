package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"time"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/internal/schema"
)

// Approval is the strength of user approval a capability asks for when an
// agent requests it.
type Approval string

// Approval strengths, weakest first.
const (
	ApprovalNone     Approval = "none"
	ApprovalSession  Approval = "session"
	ApprovalWebAuthn Approval = "webauthn"
)

// Risk classifies the harm a capability can do.
type Risk string

// Risk levels, lowest first.
const (
	RiskLow      Risk = "low"
	RiskMedium   Risk = "medium"
	RiskHigh     Risk = "high"
	RiskCritical Risk = "critical"
)

// NoInput is the input type of a capability that takes no arguments. Its
// schema is an empty object that admits no properties.
type NoInput struct{}

// Definer is implemented by everything that can be registered: a
// *Definition and every *Capability.
type Definer interface {
	Definition() *Definition
}

// Definition is a capability's transport-neutral description together with
// its compiled schemas and type-erased handler. It is immutable once
// defined and safe for concurrent use.
type Definition struct {
	name        string
	description string
	approval    Approval
	required    []string
	units       map[string]string
	risk        Risk
	scope       string
	tags        []string
	location    string
	visible     func(ctx context.Context, id *auth.Identity, executing bool) bool
	timeout     time.Duration
	title       string
	readOnly    bool
	// stream is set for capabilities defined with DefineStream; async for
	// those defined WithAsync.
	stream *streamInfo
	async  bool
	// preview is set for capabilities defined WithPreview; confirm for
	// those defined WithConfirmation.
	preview *previewSpec
	confirm bool
	// human is set for capabilities defined WithHumanConfirmation.
	human *humanOption
	audit auditSpec

	inputSchema  json.RawMessage
	outputSchema json.RawMessage
	inputProps   []string
	inValidator  *schema.Validator
	outValidator *schema.Validator
	// outImplied: the output schema was derived from a type whose every
	// encoding fits it (schema.ImpliedBy), so results need no validation.
	outImplied bool
	keys       *schema.KeyChecker

	appType reflect.Type
	inType  reflect.Type
	outType reflect.Type

	// Type-erased operations, bound to In and Out at definition time.
	// decodeTree fills In from the tree the arguments were validated as;
	// it is nil for the few input types the tree decoder does not
	// reproduce encoding/json for, which decode from the text instead.
	decodeTree func(tree any) (any, []schema.Violation, error)
	decode     func(data []byte) (any, error)
	encodeIn   func(in any) ([]byte, error)
	encodeOut  func(out any) ([]byte, error)
	// call is a func(context.Context, C, any) (any, error): typed in the
	// application context so the executor need not box it, erased in In
	// and Out.
	call any

	tel telemetryAttrs
}

// Capability is a typed definition. It is what Define returns; it can be
// registered like any Definer and called in process with [Call].
type Capability[C, In, Out any] struct {
	def *Definition
}

// Definition returns the untyped definition.
func (c *Capability[C, In, Out]) Definition() *Definition { return c.def }

// Definition returns d itself, so that a *Definition is a Definer.
func (d *Definition) Definition() *Definition { return d }

// Name returns the capability name.
func (d *Definition) Name() string { return d.name }

// Description returns the human-readable description.
func (d *Definition) Description() string { return d.description }

// Approval returns the approval strength; ApprovalNone when unset.
func (d *Definition) Approval() Approval { return d.approval }

// RequiredConstraints returns the top-level input fields that a grant must
// constrain before the capability may run. The slice must not be modified.
func (d *Definition) RequiredConstraints() []string { return d.required }

// Units returns, for each input field declared with WithUnit, the input
// field that is its unit; nil when none is. The map must not be
// modified.
func (d *Definition) Units() map[string]string { return d.units }

// Risk returns the risk level; RiskLow when unset.
func (d *Definition) Risk() Risk { return d.risk }

// Scope returns the free-form scope label, if any.
func (d *Definition) Scope() string { return d.scope }

// Tags returns the tags. The slice must not be modified.
func (d *Definition) Tags() []string { return d.tags }

// Location returns the absolute URL where the capability executes, or "".
func (d *Definition) Location() string { return d.location }

// Timeout returns the per-capability timeout, or 0 to use the executor's
// default.
func (d *Definition) Timeout() time.Duration { return d.timeout }

// InputSchema returns the JSON Schema of the input. It must not be modified.
func (d *Definition) InputSchema() json.RawMessage { return d.inputSchema }

// OutputSchema returns the JSON Schema of the output. It must not be
// modified.
func (d *Definition) OutputSchema() json.RawMessage { return d.outputSchema }

// Visible reports whether the caller id (nil: anonymous) may see the
// capability: in a listing (executing false), or when it calls it
// (executing true; see WithVisibility). Capabilities without a visibility
// predicate are visible to everyone.
func (d *Definition) Visible(ctx context.Context, id *auth.Identity, executing bool) bool {
	return d.visible == nil || d.visible(ctx, id, executing)
}

// Option configures a capability at definition time.
type Option func(*options)

type options struct {
	approval     Approval
	required     []string
	units        [][2]string
	risk         Risk
	scope        string
	tags         []string
	location     string
	visible      func(ctx context.Context, id *auth.Identity, executing bool) bool
	timeout      time.Duration
	inputSchema  json.RawMessage
	outputSchema json.RawMessage
	title        string
	readOnly     bool
	stream       *streamInfo
	async        bool
	preview      *previewOption
	confirm      bool
	human        *humanOption
	audit        auditSpec
}

// WithApproval sets the approval strength.
func WithApproval(a Approval) Option { return func(o *options) { o.approval = a } }

// WithRequiredConstraints names top-level input fields that every grant for
// the capability must constrain. Each must exist in the input schema. See
// also WithUnit, for fields a grant must constrain when it bounds another.
func WithRequiredConstraints(fields ...string) Option {
	return func(o *options) { o.required = append(o.required, fields...) }
}

// WithUnit declares that the top-level input field unit gives the unit
// of the numeric input field amount: the currency of a sum of money, the
// unit of a quantity. A bound on amount in a grant means nothing without
// its unit ("at most 500" of what?), so a grant that constrains amount
// must constrain unit too: the verifier treats one that does not as
// missing that constraint (agentauth.AuthorizeCall), the provider asks
// for it before granting, and its pages show the two together ("at most
// 500 USD"). Both fields must exist in the input schema; an amount has
// one unit.
func WithUnit(amount, unit string) Option {
	return func(o *options) { o.units = append(o.units, [2]string{amount, unit}) }
}

// WithRisk sets the risk level.
func WithRisk(r Risk) Option { return func(o *options) { o.risk = r } }

// WithScope sets a free-form scope label, such as "accounts:write".
func WithScope(scope string) Option { return func(o *options) { o.scope = scope } }

// WithTags adds tags.
func WithTags(tags ...string) Option { return func(o *options) { o.tags = append(o.tags, tags...) } }

// WithLocation sets the absolute http(s) URL where the capability executes,
// when that is not the server's default location.
func WithLocation(u string) Option { return func(o *options) { o.location = u } }

// WithVisibility sets the predicate that decides which callers see the
// capability: in listings and previews (executing false) and when they
// call it (executing true), where a capability a caller may not see is answered
// exactly like an unknown one, capability_not_found, before its input is
// read. id is nil for an anonymous caller. A predicate that hides a
// capability from some callers' listings may still admit them while they
// execute, so that they get a precise refusal (unauthorized, say) from
// the context resolver rather than a not-found that suggests a typo.
func WithVisibility(visible func(ctx context.Context, id *auth.Identity, executing bool) bool) Option {
	return func(o *options) { o.visible = visible }
}

// WithTimeout sets a per-capability timeout that replaces the executor's
// default.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithInputSchema replaces the derived input schema with an explicit JSON
// Schema (draft 2020-12). It must describe an object. Input is still
// decoded strictly into the Go type.
func WithInputSchema(schemaJSON []byte) Option {
	return func(o *options) { o.inputSchema = slices.Clone(schemaJSON) }
}

// WithOutputSchema replaces the derived output schema. It may describe any
// JSON value, not only an object. The result is still encoded from the Go
// type, a nil slice or map as [] or {} (see Define).
func WithOutputSchema(schemaJSON []byte) Option {
	return func(o *options) { o.outputSchema = slices.Clone(schemaJSON) }
}

// namePattern is the protocol's naming convention: lower-case letters,
// digits and underscores, optionally in dotted segments.
var namePattern = regexp.MustCompile(`^[a-z0-9_]+(\.[a-z0-9_]+)*$`)

// maxNameLength bounds names so that they stay usable as metric attributes
// and tool names.
const maxNameLength = 128

// DefinitionError reports a capability that cannot be defined or
// registered. It names the capability and, where it applies, the field.
type DefinitionError struct {
	Capability string
	Field      string
	Reason     string
}

// Error implements error.
func (e *DefinitionError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("agentcap: capability %q: field %s: %s", e.Capability, e.Field, e.Reason)
	}
	return fmt.Sprintf("agentcap: capability %q: %s", e.Capability, e.Reason)
}

// Define builds a capability from its name, description and typed
// handler: the use case behind it, which receives the application context
// C that the executor's context function built and the decoded input In.
// The input and output schemas are derived from In and Out once, here; a
// type that cannot be described, a bad name, an empty description or
// metadata that does not fit the schema fails with a *DefinitionError.
//
// Derivation follows encoding/json field names. Struct tags refine a
// field: description, enum (comma-separated), minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, multipleOf, minLength, maxLength,
// pattern, format, minItems, maxItems, uniqueItems, minProperties,
// maxProperties, default and example. A field is required unless its json
// tag says omitempty or omitzero; pointers, slices and maps also accept
// null. A type with its own UnmarshalJSON (for example one that normalises
// its value) describes itself with a method
//
//	JSONSchema() json.RawMessage
//
// returning a schema object for its values. Interfaces, channels, funcs,
// complex numbers, maps with non-string keys and recursive types cannot be
// described.
//
// In must be a struct or a pointer to one, since the arguments of a call
// are a JSON object. Out may be any type that can be described: a struct,
// a slice or array (the result is a JSON array), a map with string keys,
// or a basic type. Nil results are sent as follows:
//
//   - A nil slice or map is sent as [] or {}, never null, and the derived
//     schema does not admit null: an empty listing is an empty array.
//     []byte is the exception: it is a base64 string, and nil is null.
//   - A nil pointer is null, which the schema of the value it points to
//     does not admit: the call fails with internal_error, as a result the
//     handler forgot to fill.
//
// The value itself is not changed: Call returns, and hooks see, what
// the handler returned (a nil slice stays nil); Event.OutputJSON holds the
// text that was sent.
func Define[C, In, Out any](name, description string, handler func(ctx context.Context, app C, in In) (Out, error), opts ...Option) (*Capability[C, In, Out], error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	fail := func(field, format string, args ...any) (*Capability[C, In, Out], error) {
		return nil, &DefinitionError{Capability: name, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case len(name) == 0 || len(name) > maxNameLength || !namePattern.MatchString(name):
		return fail("", "invalid name: use lower-case letters, digits and underscores, optionally in dotted segments, at most %d characters", maxNameLength)
	case description == "":
		return fail("", "empty description")
	case handler == nil:
		return fail("", "nil handler")
	}

	d := &Definition{
		name:        name,
		description: description,
		approval:    o.approval,
		risk:        o.risk,
		scope:       o.scope,
		tags:        slices.Clone(o.tags),
		location:    o.location,
		visible:     o.visible,
		timeout:     o.timeout,
		title:       o.title,
		readOnly:    o.readOnly,
		stream:      o.stream,
		async:       o.async,
		confirm:     o.confirm,
		audit:       o.audit,
		appType:     reflect.TypeFor[C](),
		inType:      reflect.TypeFor[In](),
		outType:     reflect.TypeFor[Out](),
	}
	if d.approval == "" {
		d.approval = ApprovalNone
	}
	if d.risk == "" {
		d.risk = RiskLow
	}
	switch d.approval {
	case ApprovalNone, ApprovalSession, ApprovalWebAuthn:
	default:
		return fail("", "unknown approval strength %q (want none, session or webauthn)", d.approval)
	}
	switch d.risk {
	case RiskLow, RiskMedium, RiskHigh, RiskCritical:
	default:
		return fail("", "unknown risk %q (want low, medium, high or critical)", d.risk)
	}
	if d.timeout < 0 {
		return fail("", "negative timeout")
	}
	if d.async && d.stream != nil {
		return fail("", "a streaming capability cannot also be async")
	}
	if d.location != "" {
		u, err := url.Parse(d.location)
		if err != nil || !u.IsAbs() || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fail("", "location %q is not an absolute http(s) URL", d.location)
		}
	}
	for _, t := range d.tags {
		if t == "" {
			return fail("", "empty tag")
		}
	}

	var err error
	if d.inputSchema, d.inValidator, err = buildSchema(d.inType, o.inputSchema, schema.For); err != nil {
		return fail("", "input: %v", err)
	}
	if d.outputSchema, d.outValidator, err = buildSchema(d.outType, o.outputSchema, schema.ForOutput); err != nil {
		return fail("", "output: %v", err)
	}
	d.outImplied = o.outputSchema == nil && schema.ImpliedBy(d.outType)
	// Only the input must be an object: constraints and authorization
	// read its top-level fields. A result may be any JSON value.
	if d.inputProps, err = schema.Properties(d.inputSchema); err != nil {
		return fail("", "input schema: %v", err)
	}
	d.keys = schema.NewKeyChecker(d.inType)

	seen := make(map[string]bool, len(o.required))
	for _, f := range o.required {
		if seen[f] {
			return fail(f, "listed twice in required constraints")
		}
		seen[f] = true
		if !slices.Contains(d.inputProps, f) {
			return fail(f, "required constraint names a field that is not a top-level input property")
		}
	}
	d.required = slices.Clone(o.required)
	slices.Sort(d.required)
	for _, u := range o.units {
		amount, unit := u[0], u[1]
		switch {
		case !slices.Contains(d.inputProps, amount):
			return fail(amount, "WithUnit names an amount that is not a top-level input property")
		case !slices.Contains(d.inputProps, unit):
			return fail(unit, "WithUnit names a unit that is not a top-level input property")
		case amount == unit:
			return fail(amount, "WithUnit makes a field its own unit")
		case d.units[amount] != "":
			return fail(amount, "WithUnit gives the amount two units")
		}
		if d.units == nil {
			d.units = map[string]string{}
		}
		d.units[amount] = unit
	}

	if dec, err := schema.NewDecoder(d.inType); err == nil {
		d.decodeTree = func(tree any) (any, []schema.Violation, error) {
			var in In
			if violations, err := dec.Decode(tree, &in); violations != nil || err != nil {
				return nil, violations, err
			}
			return in, nil, nil
		}
	}
	d.decode = func(data []byte) (any, error) {
		var in In
		if err := json.Unmarshal(data, &in); err != nil {
			return nil, err
		}
		return in, nil
	}
	// in already holds In; encoding it as it is avoids boxing the value a
	// second time.
	d.encodeIn = func(in any) ([]byte, error) { return json.Marshal(in) }
	d.encodeOut = resultEncoder(d.outType)
	d.call = func(ctx context.Context, app C, in any) (any, error) {
		return handler(ctx, app, in.(In))
	}
	if o.preview != nil {
		if d.preview, err = o.preview.build(d); err != nil {
			return fail("", "preview: %v", err)
		}
	}
	if o.human != nil {
		if err := o.human.build(d); err != nil {
			return fail("", "human confirmation: %v", err)
		}
		d.human = o.human
	}
	if err := d.audit.build(d); err != nil {
		return fail("", "%v", err)
	}
	d.tel = newTelemetryAttrs(name)
	return &Capability[C, In, Out]{def: d}, nil
}

// MustDefine is Define for package-level variables: it panics on error.
func MustDefine[C, In, Out any](name, description string, handler func(ctx context.Context, app C, in In) (Out, error), opts ...Option) *Capability[C, In, Out] {
	c, err := Define(name, description, handler, opts...)
	if err != nil {
		panic(err)
	}
	return c
}

// resultEncoder returns the encoder of results of type t: encoding/json,
// except that a nil slice or map is sent as [] or {} (see Define).
func resultEncoder(t reflect.Type) func(out any) ([]byte, error) {
	// A pointer at the top of the type stands for what it points to (a
	// nil pointer is null, which the derived schema refuses).
	base, pointers := t, 0
	for base.Kind() == reflect.Pointer {
		base, pointers = base.Elem(), pointers+1
	}
	empty := schema.NilEncoding(base)
	if empty == nil {
		// out already holds the result type; encoding it as it is avoids
		// boxing the value a second time.
		return func(out any) ([]byte, error) { return json.Marshal(out) }
	}
	// encoding/json writes null for a nil slice or map, which the derived
	// schema refuses; the caller sees an empty collection, also behind
	// non-nil pointers.
	return func(out any) ([]byte, error) {
		v := reflect.ValueOf(out)
		for range pointers {
			if v.IsNil() {
				return json.Marshal(out)
			}
			v = v.Elem()
		}
		if v.IsNil() {
			return slices.Clone(empty), nil
		}
		return json.Marshal(out)
	}
}

// buildSchema derives the schema of t with derive, or uses the explicit
// one, and compiles it.
func buildSchema(t reflect.Type, explicit json.RawMessage, derive func(reflect.Type) ([]byte, error)) (json.RawMessage, *schema.Validator, error) {
	doc := explicit
	if doc == nil {
		var err error
		if doc, err = derive(t); err != nil {
			return nil, nil, err
		}
	} else if !json.Valid(doc) {
		return nil, nil, errors.New("explicit schema is not valid JSON")
	}
	v, err := schema.Compile(doc)
	if err != nil {
		return nil, nil, err
	}
	return doc, v, nil
}
