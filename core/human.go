package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/agentcap/agentcap"
)

// humanOption is what WithHumanConfirmation hands to Define before the
// handler's types are known.
type humanOption struct {
	appType, inType reflect.Type
	// call is a func(context.Context, C, any) (bool, error) for the
	// rule's C.
	call any
}

// WithHumanConfirmation makes a person confirm the calls for which rule
// reports true (a transfer above some amount, say), deciding from the
// call's application context and input; rule must not change anything,
// and its error fails the call at stage confirmation as a handler's would.
// The other calls are
// confirmed as WithConfirmation asks. Such a call without a confirmation
// token asks the executor's HumanConfirmer (see
// [ConfirmationConfig.Human]) for the person's decision and fails with
// CodeConfirmationPending, carrying where the person confirms and where
// the caller polls for the token the decision gives. Only a token issued
// after a person confirmed confirms such a call.
//
// The capability needs a preview (WithPreview): it is what the person is
// shown. C and In must be the handler's, or Define fails. The option
// implies WithConfirmation.
func WithHumanConfirmation[C, In any](rule func(ctx context.Context, app C, in In) (bool, error)) Option {
	return func(o *options) {
		o.confirm = true
		if rule == nil {
			o.human = &humanOption{}
			return
		}
		o.human = &humanOption{
			appType: reflect.TypeFor[C](),
			inType:  reflect.TypeFor[In](),
			call: func(ctx context.Context, app C, in any) (bool, error) {
				return rule(ctx, app, in.(In))
			},
		}
	}
}

// build checks the rule against d.
func (h *humanOption) build(d *Definition) error {
	switch {
	case h.call == nil:
		return errors.New("nil rule")
	case h.appType != d.appType:
		return fmt.Errorf("the rule takes application context %v, the handler %v", h.appType, d.appType)
	case h.inType != d.inType:
		return fmt.Errorf("the rule takes input %v, the handler %v", h.inType, d.inType)
	case d.preview == nil:
		return errors.New("a person confirms what the preview shows: add WithPreview")
	}
	return nil
}

// HumanConfirmer asks a person to confirm one call and tells the caller
// where to wait for the decision. agentcap's Agent Auth provider
// implements it (provider.Provider.HumanConfirmer): the person is the
// agent's user, who confirms on the provider's approval page, and the
// caller polls the provider for the confirmation token the decision
// gives. It must be safe for concurrent use.
type HumanConfirmer interface {
	// RequestHumanConfirmation records r for a person's decision and
	// returns what the caller is told. Once the person confirms, the
	// implementation issues, once, a token for r.Binding (whose Human is
	// set) through the executor's Confirmer, and hands it to the caller
	// that polls StatusURL. An *agentcap.Error refuses the call in its own
	// words; any other error is taken for a store that does not answer,
	// and the call is refused with CodeTemporarilyUnavailable.
	RequestHumanConfirmation(ctx context.Context, r HumanConfirmationRequest) (*HumanConfirmationPending, error)
}

// HumanConfirmationRequest is a call a person is asked to confirm.
type HumanConfirmationRequest struct {
	// Binding is the call, as its token will be bound: Human is set. Its
	// Arguments must be copied to be kept.
	Binding ConfirmationBinding
	// Definition is the capability called.
	Definition *Definition
	// Preview is the call's validated preview: what the person is
	// shown. It must be copied to be kept.
	Preview json.RawMessage
}

// HumanConfirmationPending tells a caller how its call gets confirmed.
type HumanConfirmationPending struct {
	// Approval is what to show the person, in the shape of an Agent Auth
	// approval object.
	Approval ConfirmationApproval
	// StatusURL is where the caller polls for the decision.
	StatusURL string
}

// ConfirmationApproval is the approval object of a pending confirmation,
// in the shape of the Agent Auth provider's approval object: where the
// person goes (the verification URI, with the user code in it), the code
// the caller shows them, and how long and how often to poll.
type ConfirmationApproval struct {
	Method                  string `json:"method"`
	VerificationURI         string `json:"verification_uri,omitempty"`
	VerificationURIComplete string `json:"verification_uri_complete,omitempty"`
	UserCode                string `json:"user_code,omitempty"`
	BindingMessage          string `json:"binding_message,omitempty"`
	// ExpiresIn is the seconds left to decide; Interval the seconds
	// between polls.
	ExpiresIn int `json:"expires_in"`
	Interval  int `json:"interval"`
}

// Public messages of a person's confirmation.
const (
	msgConfirmationPending = "a person must confirm this call: poll status_url for the decision, then execute it again with the confirmation token"
	msgNoHumanConfirmer    = "this call needs a person's confirmation, which this server cannot ask for"
)

// needsHuman runs def's rule, if it has one, for a call.
func needsHuman[C any](ctx context.Context, def *Definition, app C, in any) (bool, *agentcap.Error) {
	if def.human == nil {
		return false, nil
	}
	rule := def.human.call.(func(context.Context, C, any) (bool, error))
	var human bool
	perr := protect(func() error {
		var rerr error
		human, rerr = rule(ctx, app, in)
		return rerr
	})
	if err := classify(perr, agentcap.StageConfirmation, agentcap.CodeInternalError); err != nil {
		return false, err
	}
	return human, nil
}

// askHuman asks the executor's HumanConfirmer to have a person confirm
// the call b, whose preview is preview, and returns the
// CodeConfirmationPending error that tells the caller how to wait.
func (c *confirmation) askHuman(ctx context.Context, def *Definition, b ConfirmationBinding, preview json.RawMessage) *agentcap.Error {
	if c.human == nil {
		return newErr(agentcap.CodeUnauthorized, agentcap.StageConfirmation, msgNoHumanConfirmer, nil)
	}
	p, err := c.human.RequestHumanConfirmation(ctx, HumanConfirmationRequest{Binding: b, Definition: def, Preview: preview})
	if err != nil {
		return confirmerFailure(err, msgHumanUnavailable)
	}
	ce := newErr(agentcap.CodeConfirmationPending, agentcap.StageConfirmation, msgConfirmationPending, nil)
	ce.Fields = map[string]any{"approval": p.Approval, "status_url": p.StatusURL, "preview": preview}
	return ce
}
