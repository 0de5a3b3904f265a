package core

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/internal/schema"
)

// previewOption is what WithPreview hands to Define before the handler's
// types are known.
type previewOption struct {
	appType, inType, outType reflect.Type
	// call is a func(context.Context, C, any) (any, error) for the
	// preview's C, which Define checks against the handler's.
	call any
}

// previewSpec is a definition's compiled preview.
type previewSpec struct {
	schema    json.RawMessage
	validator *schema.Validator
	implied   bool
	encode    func(out any) ([]byte, error)
	call      any
}

// WithPreview gives a capability a dry run: preview receives the same
// application context and input as the capability's handler and returns
// what the call would do, without changing anything. P is its own result
// type, whose JSON Schema is derived when the capability is defined and
// published as the capability's preview schema. A preview runs the same
// stages as an execution (lookup, input, authorize, context) and then
// preview instead of the handler; its result is validated against the
// schema derived from P (see [Definition.PreviewSchema]) like any result.
// preview must not change anything: it shows a person or an agent what
// the call would do, before a confirmation is asked for (see
// [WithConfirmation]). C and In must be the handler's, or Define fails.
func WithPreview[C, In, P any](preview func(ctx context.Context, app C, in In) (P, error)) Option {
	return func(o *options) {
		if preview == nil {
			o.preview = &previewOption{}
			return
		}
		o.preview = &previewOption{
			appType: reflect.TypeFor[C](),
			inType:  reflect.TypeFor[In](),
			outType: reflect.TypeFor[P](),
			call: func(ctx context.Context, app C, in any) (any, error) {
				return preview(ctx, app, in.(In))
			},
		}
	}
}

// build checks the preview against d and compiles its schema.
func (p *previewOption) build(d *Definition) (*previewSpec, error) {
	switch {
	case p.call == nil:
		return nil, fmt.Errorf("nil preview handler")
	case p.appType != d.appType:
		return nil, fmt.Errorf("the preview takes application context %v, the handler %v", p.appType, d.appType)
	case p.inType != d.inType:
		return nil, fmt.Errorf("the preview takes input %v, the handler %v", p.inType, d.inType)
	}
	doc, v, err := buildSchema(p.outType, nil, schema.ForOutput)
	if err != nil {
		return nil, err
	}
	return &previewSpec{
		schema:    doc,
		validator: v,
		implied:   schema.ImpliedBy(p.outType),
		encode:    resultEncoder(p.outType),
		call:      p.call,
	}, nil
}

// SupportsPreview reports whether the capability was defined WithPreview.
func (d *Definition) SupportsPreview() bool { return d.preview != nil }

// PreviewSchema returns the JSON Schema of the preview's result, or nil
// for a capability without a preview. It must not be modified.
func (d *Definition) PreviewSchema() json.RawMessage {
	if d.preview == nil {
		return nil
	}
	return d.preview.schema
}

// PreviewResult is the outcome of a successful preview.
type PreviewResult struct {
	// Data is the validated preview JSON.
	Data json.RawMessage
	// Confirmation is the token that confirms the previewed call, when
	// the executor says the capability needs one (see
	// [Executor.NeedsConfirmation]); nil otherwise, and nil for a call
	// that a person must confirm.
	Confirmation *Confirmation
	// HumanConfirmation reports a call that a person must confirm (see
	// WithHumanConfirmation): executing it asks them.
	HumanConfirmation bool
}

// Preview runs the preview of the named capability for the caller id
// with raw JSON arguments, as a transport does: lookup, input, authorize
// and context exactly as [Executor.Execute] runs them, then the preview
// handler (stage preview) and the validation of its result. When the
// capability needs a confirmation, a token bound to id, the capability
// and these arguments is issued with the result. A capability without a
// preview fails with preview_not_supported. Every error is an
// *agentcap.Error.
func (e *Executor) Preview(ctx context.Context, name string, id *auth.Identity, args []byte) (*PreviewResult, error) {
	if def, ok := e.lookup(ctx, name, id, false); ok && def.preview == nil {
		return nil, newErr(agentcap.CodePreviewNotSupported, agentcap.StageLookup, msgPreviewNotSupported, nil)
	}
	var res PreviewResult
	_, data, err := e.app.pipeline(ctx, name, id, args, nil, &res)
	if err != nil {
		return nil, err
	}
	res.Data = data
	return &res, nil
}

const msgPreviewNotSupported = "this capability has no preview"

// checkPreview encodes and validates a preview's result, as checkOutput
// does for the handler's.
func (p *previewSpec) check(out any) ([]byte, *agentcap.Error) {
	data, err := p.encode(out)
	if err != nil {
		return nil, internalAt(agentcap.StageOutput, fmt.Errorf("encoding the preview: %w", err))
	}
	if p.implied {
		return data, nil
	}
	return validateResult(p.validator, data, "preview")
}
