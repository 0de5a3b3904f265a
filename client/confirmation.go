package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Error codes of previews and confirmations, agentcap's extension of the
// execute surface (see docs/confirmation.md in the module).
const (
	// CodePreviewNotSupported: the capability has no preview.
	CodePreviewNotSupported = "preview_not_supported"
	// CodeConfirmationRequired: the call needs a confirmation token and
	// carried none. The answer becomes a *ConfirmationRequired.
	CodeConfirmationRequired = "confirmation_required"
	// CodeConfirmationMismatch: the token was issued for another
	// capability or other arguments (409).
	CodeConfirmationMismatch = "confirmation_mismatch"
	// CodeConfirmationExpired: the token's lifetime is over (409).
	CodeConfirmationExpired = "confirmation_expired"
	// CodeConfirmationUsed: the token confirmed a call already (409).
	CodeConfirmationUsed = "confirmation_used"
	// CodeInvalidConfirmation: the token is unknown or forged, or was
	// issued to another agent or for another location (403).
	CodeInvalidConfirmation = "invalid_confirmation"
	// CodeConfirmationDenied: the person asked to confirm the call
	// refused it (403).
	CodeConfirmationDenied = "confirmation_denied"
)

// IsConfirmationRefused reports whether err is a refusal of the
// confirmation token a call carried: mismatched, expired, used or
// invalid. Such a call did not run; a fresh confirmation (a preview, or
// the answer of the call without a token) is needed to try again.
func IsConfirmationRefused(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case CodeConfirmationMismatch, CodeConfirmationExpired, CodeConfirmationUsed, CodeInvalidConfirmation:
		return true
	}
	return false
}

// Confirmation is a confirmation token: it confirms one call of the
// capability, with the arguments, by the agent it was issued for, once,
// until ExpiresAt.
type Confirmation struct {
	Token string `json:"token"`
	// ExpiresAt is zero when the server named no expiry (or one that is
	// not RFC 3339).
	ExpiresAt time.Time `json:"expires_at"`
}

// UnmarshalJSON reads {"token", "expires_at"}, ignoring an expiry that is
// not an RFC 3339 time rather than failing the whole answer.
func (c *Confirmation) UnmarshalJSON(b []byte) error {
	var v struct {
		Token     string          `json:"token"`
		ExpiresAt json.RawMessage `json:"expires_at"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = Confirmation{Token: v.Token}
	var s string
	if json.Unmarshal(v.ExpiresAt, &s) == nil {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			c.ExpiresAt = t
		}
	}
	return nil
}

// PreviewResult is the answer of Agent.Preview.
type PreviewResult struct {
	// Preview is what the call would do, as JSON, in the shape of the
	// capability's preview schema.
	Preview json.RawMessage `json:"preview"`
	// Confirmation confirms exactly the previewed call, when the
	// capability needs a confirmation; nil otherwise.
	Confirmation *Confirmation `json:"confirmation,omitempty"`
}

// ConfirmationRequired is the error of a call that needs a confirmation
// and carried no token: a 428 confirmation_required answer, or a batch
// item that failed alike. It carries what confirming takes one more call
// for: the preview to show and a fresh token, which confirms the same
// capability with the same arguments (pass it with WithConfirmationToken,
// or in BatchCall.ConfirmationToken). It unwraps to the *Error of the
// answer, so IsCode(err, CodeConfirmationRequired) holds too.
type ConfirmationRequired struct {
	// Err is the answer as an *Error.
	Err *Error
	// Capability is the capability called.
	Capability string
	// Preview is the capability's preview of the call, or nil when it
	// has none.
	Preview json.RawMessage
	// Confirmation is the fresh token.
	Confirmation Confirmation
}

// Error implements error.
func (e *ConfirmationRequired) Error() string {
	return fmt.Sprintf("%v (confirmation of %s needed)", e.Err, e.Capability)
}

// Unwrap returns the answer's *Error.
func (e *ConfirmationRequired) Unwrap() error { return e.Err }

// confirmationRequired turns a confirmation_required *Error that carries
// a token into a *ConfirmationRequired; any other error is returned as it
// is.
func confirmationRequired(capability string, err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeConfirmationRequired {
		return err
	}
	var body struct {
		Preview      json.RawMessage `json:"preview"`
		Confirmation *Confirmation   `json:"confirmation"`
	}
	if json.Unmarshal(e.Body, &body) != nil || body.Confirmation == nil || body.Confirmation.Token == "" {
		return err
	}
	return &ConfirmationRequired{Err: e, Capability: capability, Preview: body.Preview, Confirmation: *body.Confirmation}
}

// WithConfirmationToken sends token with the call, as
// "confirmation_token" in its body: the token of a preview, or of a
// *ConfirmationRequired, for the same capability and arguments.
func WithConfirmationToken(token string) ExecuteOption {
	return func(c *executeConfig) { c.confirmationToken = token }
}

// Preview runs capability's dry run with args (as for Execute) at the
// capability's location, POST {location}/capability/preview with the
// execute body, after the same authentication, grant and constraint
// checks as an execution. It returns what the call would do and, when the
// capability needs a confirmation, a token confirming exactly this call.
// A capability without a preview fails with CodePreviewNotSupported; a
// location whose URL does not end in an execute segment has no preview
// endpoint the client can name, which is an error too.
func (a *Agent) Preview(ctx context.Context, capability string, args any) (*PreviewResult, error) {
	arguments, err := encodeArguments(args)
	if err != nil {
		return nil, err
	}
	loc, err := a.location(ctx, capability)
	if err != nil {
		return nil, err
	}
	ep := siblingEndpoint(loc, "preview")
	if ep == "" {
		return nil, fmt.Errorf("client: the location of %s, %s, has no preview endpoint", capability, loc)
	}
	names := []string{capability}
	var res PreviewResult
	_, _, err = a.c.do(ctx, call{
		method: http.MethodPost,
		url:    ep,
		token: func() (string, error) {
			return a.agentSigner.agentToken(a.conn.HostID, a.conn.AgentID, loc, names)
		},
		body: executeBody{Capability: capability, Arguments: arguments},
	}, &res)
	if err != nil {
		a.forgetStale(capability, err)
		return nil, err
	}
	if res.Preview == nil {
		res.Preview = json.RawMessage("null")
	}
	if res.Confirmation != nil && res.Confirmation.Token == "" {
		return nil, errors.New("client: preview answer with a confirmation but no token")
	}
	return &res, nil
}
