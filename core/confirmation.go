package core

import (
	"context"
	"errors"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
)

// WithConfirmation marks a capability whose every call must be confirmed
// with a single-use token bound to that exact call (see
// [ConfirmationConfig]). Capabilities of high or critical risk need one
// without it, under the executor's default rule.
func WithConfirmation() Option { return func(o *options) { o.confirm = true } }

// RequiresConfirmation reports whether the capability was defined
// WithConfirmation.
func (d *Definition) RequiresConfirmation() bool { return d.confirm }

// NeedsConfirmation is the default confirmation rule: a capability needs
// a confirmation when it was defined WithConfirmation or its risk is high
// or critical. An executor applies it, or the rule it was configured
// with, only when it has a Confirmer: see [Executor.NeedsConfirmation].
func (d *Definition) NeedsConfirmation() bool {
	return d.confirm || d.risk == RiskHigh || d.risk == RiskCritical
}

// ConfirmationBinding is what a confirmation token is bound to: one call
// of one capability, with these arguments, by one caller, at one
// location.
type ConfirmationBinding struct {
	// Subject names the caller: its identity's Subject (an Agent Auth
	// agent's id).
	Subject string
	// Capability is the capability's name.
	Capability string
	// Arguments is the call's raw JSON arguments (nil means {}). A
	// Confirmer compares them in a canonical form, so that member order,
	// white space and number spelling do not matter. It must not be
	// modified or kept.
	Arguments []byte
	// Audience is the location the call runs at: the capability's
	// location, else ConfirmationConfig.Audience.
	Audience string
	// Human marks a call that a person must confirm (see
	// WithHumanConfirmation): only a token issued after a person's
	// confirmation, for a binding with Human set, confirms it, and such
	// a token confirms nothing else.
	Human bool
}

// Confirmation is an issued confirmation token.
type Confirmation struct {
	// ID names the token in logs and audit records without revealing it.
	ID string
	// Token is the secret the caller sends to confirm the call.
	Token string
	// ExpiresAt is when the token stops confirming anything.
	ExpiresAt time.Time
}

// Confirmer issues confirmation tokens and consumes them. Package confirm
// implements it over stores that several instances share. It must be safe
// for concurrent use.
type Confirmer interface {
	// Issue returns a fresh token for b. An error other than an
	// *agentcap.Error or a context error is taken for a store that does not
	// answer (CodeTemporarilyUnavailable).
	Issue(ctx context.Context, b ConfirmationBinding) (Confirmation, error)
	// Consume spends token on a call described by b, atomically: of many
	// concurrent calls with one token at most one succeeds. It fails with
	// ErrConfirmationInvalid (unknown or forged, or issued to another
	// subject or audience), ErrConfirmationUsed, ErrConfirmationExpired or
	// ErrConfirmationMismatch (another capability or other arguments), in
	// that order of precedence, possibly wrapped; any other error is a
	// failure of the Confirmer, which the executor takes for a store that
	// does not answer (CodeTemporarilyUnavailable, unless it is an
	// *agentcap.Error or a context error). A token that fails is not spent.
	Consume(ctx context.Context, token string, b ConfirmationBinding) error
}

// Errors of Confirmer.Consume.
var (
	ErrConfirmationInvalid  = errors.New("agentcap: invalid confirmation token")
	ErrConfirmationUsed     = errors.New("agentcap: confirmation token already used")
	ErrConfirmationExpired  = errors.New("agentcap: confirmation token expired")
	ErrConfirmationMismatch = errors.New("agentcap: confirmation token issued for another call")
)

// ConfirmationConfig configures an executor's confirmations. The zero
// value confirms nothing. A token is bound to the caller's identity
// (auth.Identity.Subject): a call without an identity cannot be
// confirmed, and is refused with unauthorized when it needs a
// confirmation.
type ConfirmationConfig struct {
	// Confirmer issues and consumes the tokens. Nil: no call needs a
	// confirmation, and NewExecutor refuses a registry holding a
	// capability defined WithConfirmation.
	Confirmer Confirmer
	// Rule decides which capabilities need a confirmation. Nil means
	// (*Definition).NeedsConfirmation: those defined WithConfirmation and
	// those of high or critical risk. Capabilities defined
	// WithHumanConfirmation need one whatever it says.
	Rule func(d *Definition) bool
	// Audience is the location a token is bound to for capabilities
	// without a location of their own: the server's default location.
	Audience string
	// Human asks a person to confirm the calls that a capability's
	// WithHumanConfirmation rule picks. Nil: such calls are refused with
	// unauthorized, since nobody can be asked.
	Human HumanConfirmer
}

// confirmation is an executor's checked ConfirmationConfig.
type confirmation struct {
	confirmer Confirmer
	human     HumanConfirmer
	audience  string
	// needs holds the capabilities that need a confirmation.
	needs map[*Definition]bool
}

func newConfirmation(cfg ConfirmationConfig, reg *Registry) (*confirmation, error) {
	if cfg.Confirmer == nil {
		for _, d := range reg.defs {
			if d.confirm {
				return nil, &DefinitionError{Capability: d.name,
					Reason: "it needs a confirmation: set Config.Confirmation.Confirmer"}
			}
		}
		return nil, nil
	}
	rule := cfg.Rule
	if rule == nil {
		rule = (*Definition).NeedsConfirmation
	}
	c := &confirmation{confirmer: cfg.Confirmer, human: cfg.Human, audience: cfg.Audience,
		needs: make(map[*Definition]bool)}
	for _, d := range reg.defs {
		// A person's confirmation cannot be waived by the rule.
		if rule(d) || d.human != nil {
			c.needs[d] = true
		}
	}
	return c, nil
}

// NeedsConfirmation reports whether calls of d through e must carry a
// confirmation token: e has a Confirmer and its rule says so.
func (e *Executor) NeedsConfirmation(d *Definition) bool {
	return e.confirm != nil && e.confirm.needs[d]
}

type confirmationTokenKey struct{}

// WithConfirmationToken returns a copy of ctx carrying the confirmation
// token a caller sent with a call, which the executor consumes for a
// capability that needs a confirmation (and ignores otherwise). A
// transport reads it from the request; an empty token returns ctx
// unchanged. The items of a batch carry their own tokens (see
// BatchCall.ConfirmationToken).
func WithConfirmationToken(ctx context.Context, token string) context.Context {
	if token == "" {
		return ctx
	}
	return context.WithValue(ctx, confirmationTokenKey{}, token)
}

func confirmationToken(ctx context.Context) string {
	s, _ := ctx.Value(confirmationTokenKey{}).(string)
	return s
}

// binding describes a call for its confirmation. ok is false for a caller
// that cannot confirm.
func (c *confirmation) binding(def *Definition, id *auth.Identity, args []byte) (ConfirmationBinding, bool) {
	b := ConfirmationBinding{Capability: def.name, Arguments: args, Audience: def.location}
	if id != nil {
		b.Subject = id.Subject
	}
	if b.Audience == "" {
		b.Audience = c.audience
	}
	return b, b.Subject != ""
}

// Public messages of confirmations.
const (
	msgConfirmationRequired = "this call must be confirmed: execute it again with the confirmation token"
	msgConfirmationMismatch = "the confirmation token was issued for another call"
	msgConfirmationExpired  = "the confirmation token has expired: ask for a new one"
	msgConfirmationUsed     = "the confirmation token was already used"
	msgInvalidConfirmation  = "the confirmation token is not valid for this caller"
	msgCannotConfirm        = "this caller cannot confirm calls"
	msgConsumeUnavailable   = "confirmation tokens cannot be checked now: the call did not run and its token is not spent; retry later"
	msgIssueUnavailable     = "confirmation tokens cannot be issued now; retry later"
	msgHumanUnavailable     = "a person's confirmation cannot be asked for now: the call did not run; retry later"
)

// consumeError maps a Confirmer's refusal to its code.
func consumeError(err error) *agentcap.Error {
	var code agentcap.Code
	var msg string
	switch {
	case errors.Is(err, ErrConfirmationInvalid):
		code, msg = agentcap.CodeInvalidConfirmation, msgInvalidConfirmation
	case errors.Is(err, ErrConfirmationUsed):
		code, msg = agentcap.CodeConfirmationUsed, msgConfirmationUsed
	case errors.Is(err, ErrConfirmationExpired):
		code, msg = agentcap.CodeConfirmationExpired, msgConfirmationExpired
	case errors.Is(err, ErrConfirmationMismatch):
		code, msg = agentcap.CodeConfirmationMismatch, msgConfirmationMismatch
	default:
		return confirmerFailure(err, msgConsumeUnavailable)
	}
	return newErr(code, agentcap.StageConfirmation, msg, err)
}

// confirmerFailure classifies a failure of a Confirmer or HumanConfirmer
// that is not a refusal of the token. The caller's cancellation or
// deadline, an application error and a panic keep their meaning; any
// other error is taken for a store that did not answer, and the call,
// which did not run, is refused with temporarily_unavailable: fail
// closed, and say that the same call may be sent again.
func confirmerFailure(err error, msg string) *agentcap.Error {
	if agentcap.As(err) != nil || errors.Is(err, ErrForbidden) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return classify(err, agentcap.StageConfirmation, agentcap.CodeTemporarilyUnavailable)
	}
	var pe *panicError
	if errors.As(err, &pe) {
		return internalAt(agentcap.StageConfirmation, err)
	}
	return agentcap.Unavailable(msg, err).WithStage(agentcap.StageConfirmation)
}

// ConfirmationJSON renders c as transports send it:
// {"token": ..., "expires_at": "<RFC 3339, UTC>"}.
func ConfirmationJSON(c Confirmation) map[string]string {
	return map[string]string{"token": c.Token, "expires_at": c.ExpiresAt.UTC().Format(time.RFC3339)}
}
