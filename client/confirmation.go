package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/agentcap/agentcap"
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
	case agentcap.CodeConfirmationMismatch, agentcap.CodeConfirmationExpired, agentcap.CodeConfirmationUsed, agentcap.CodeInvalidConfirmation:
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
	ExpiresAt time.Time `json:"expires_at,omitzero"`
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
	// capability needs a confirmation; nil otherwise, and nil when a
	// person must confirm the call.
	Confirmation *Confirmation `json:"confirmation,omitempty"`
	// RequiresHumanConfirmation reports a call that a person must
	// confirm: executing it asks them (see ConfirmationPending).
	RequiresHumanConfirmation bool `json:"requires_human_confirmation,omitempty"`
}

// ConfirmationRequired is the error of a call that needs a confirmation
// and carried no token: a 428 confirmation_required answer, or a batch
// item that failed alike. It carries what confirming takes one more call
// for: the preview to show and a fresh token, which confirms the same
// capability with the same arguments (pass it with WithConfirmationToken,
// or in BatchCall.ConfirmationToken). It unwraps to the *Error of the
// answer, so IsCode(err, agentcap.CodeConfirmationRequired) holds too.
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
	if !errors.As(err, &e) || e.Code != agentcap.CodeConfirmationRequired {
		return err
	}
	var c Confirmation
	if json.Unmarshal(e.Fields["confirmation"], &c) != nil || c.Token == "" {
		return err
	}
	return &ConfirmationRequired{Err: e, Capability: capability, Preview: e.Fields["preview"], Confirmation: c}
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
// A capability without a preview fails with
// agentcap.CodePreviewNotSupported; a location whose URL does not end in
// an execute segment has no preview endpoint the client can name, which
// is an error too.
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

// pendingAnswer is a confirmation_pending answer (202, see
// agentcap.CodeConfirmationPending), whose discriminator is "status" or,
// in the error envelope's shape, "error" (or a batch item's "code").
type pendingAnswer struct {
	Status    string          `json:"status"`
	Error     json.RawMessage `json:"error"`
	Code      agentcap.Code   `json:"code"`
	Approval  *Approval       `json:"approval"`
	StatusURL string          `json:"status_url"`
	Preview   json.RawMessage `json:"preview"`
}

// pending reports whether p is a confirmation_pending answer.
func (p *pendingAnswer) pending() bool {
	if agentcap.Code(p.Status) == agentcap.CodeConfirmationPending || p.Code == agentcap.CodeConfirmationPending {
		return true
	}
	var code agentcap.Code
	return json.Unmarshal(p.Error, &code) == nil && code == agentcap.CodeConfirmationPending
}

// ConfirmationPending is the error of a call that waits for a person's
// confirmation: the location answered 202 confirmation_pending with an
// approval (a verification URI and user code to show the person) and a
// status URL. Agent.AwaitConfirmation waits for the decision; or let
// Execute wait, with WithConfirmationWait.
type ConfirmationPending struct {
	// Capability is the capability called.
	Capability string
	// Approval tells how the person confirms; AgentID is filled in.
	Approval Approval
	// StatusURL is polled for the decision.
	StatusURL string
	// Preview is what the person is shown, when the answer carried it.
	Preview json.RawMessage

	loc string
}

// Error implements error.
func (e *ConfirmationPending) Error() string {
	return fmt.Sprintf("client: the call of %s waits for a person's confirmation", e.Capability)
}

// WithConfirmationWait makes Execute wait when the location asks for a
// person's confirmation of the call: onApproval receives the approval
// (show its verification URI and user code to the person, as for
// Connect), the status URL is polled until the person decides, and an
// approved call is executed once more with the confirmation token the
// decision gave. A refusal is an error wrapping ErrApprovalDenied (with
// agentcap.CodeConfirmationDenied); an approval that ran out,
// ErrApprovalExpired.
// onApproval may be nil to wait without showing anything.
func WithConfirmationWait(onApproval func(Approval)) ExecuteOption {
	if onApproval == nil {
		onApproval = func(Approval) {}
	}
	return func(c *executeConfig) { c.onApproval = onApproval }
}

// confirmationPending builds the *ConfirmationPending of a
// confirmation_pending answer.
func (a *Agent) confirmationPending(capability, loc string, ans pendingAnswer) error {
	statusURL, err := a.checkStatusURL(loc, ans.StatusURL)
	if err != nil {
		return err
	}
	p := &ConfirmationPending{Capability: capability, StatusURL: statusURL, Preview: ans.Preview, loc: loc}
	if ans.Approval != nil {
		p.Approval = *ans.Approval
	}
	p.Approval.AgentID = a.conn.AgentID
	return p
}

// confirmationStatus is an answer of a pending confirmation's status URL.
type confirmationStatus struct {
	Status       string        `json:"status"`
	Confirmation *Confirmation `json:"confirmation"`
	// Token is the decision's token when it comes as a bare
	// "confirmation_token".
	Token string `json:"confirmation_token"`
}

// AwaitConfirmation hands p's approval to onApproval (when non-nil) and
// polls p's status URL, with a fresh agent JWT each time (for the issuer
// when the status URL is on the issuer's origin, else for the location),
// until the person decides, the approval expires or ctx ends. It returns
// the token that confirms the call, to execute it with
// WithConfirmationToken and the same arguments. It waits as Connect
// does: the approval's interval between polls, slowDownStep more on every
// slow_down, twice as long after a 429, a server error or a network
// failure. A refusal is an error wrapping ErrApprovalDenied (with
// agentcap.CodeConfirmationDenied); an approval that expired,
// ErrApprovalExpired.
func (a *Agent) AwaitConfirmation(ctx context.Context, p *ConfirmationPending, onApproval func(Approval)) (*Confirmation, error) {
	if onApproval != nil {
		onApproval(p.Approval)
	}
	interval := defaultPollInterval
	if p.Approval.Interval > 0 {
		interval = time.Duration(p.Approval.Interval) * time.Second
	}
	var deadline time.Time
	if p.Approval.ExpiresIn > 0 {
		deadline = a.c.cfg.Now().Add(time.Duration(p.Approval.ExpiresIn) * time.Second)
	}
	// The status URL is the provider's (where the person decides) or the
	// location's; the token is for the issuer on the issuer's origin,
	// for the location elsewhere.
	aud := p.loc
	if u, err := url.Parse(p.StatusURL); err == nil {
		if iss, err := url.Parse(a.conn.Issuer); err == nil && origin(u) == origin(iss) {
			aud = a.conn.Issuer
		}
	}
	names := []string{p.Capability}
	token := func() (string, error) {
		return a.agentSigner.agentToken(a.conn.HostID, a.conn.AgentID, aud, names)
	}
	ceiling := max(a.c.cfg.MaxPollInterval, interval)
	wait := interval
	for {
		if err := a.c.cfg.Sleep(ctx, wait); err != nil {
			return nil, err
		}
		var st confirmationStatus
		_, _, err := a.c.do(ctx, call{method: http.MethodGet, url: p.StatusURL, token: token}, &st)
		if err != nil {
			if err := pollFailed(ctx, err, &interval, &wait, ceiling); err != nil {
				return nil, err
			}
		} else {
			if st.Confirmation != nil && st.Confirmation.Token != "" {
				return st.Confirmation, nil
			}
			if st.Token != "" {
				return &Confirmation{Token: st.Token}, nil
			}
			switch st.Status {
			case "", agentcap.StatusPending, string(agentcap.CodeConfirmationPending), string(agentcap.CodeAuthorizationPending):
				wait = interval
			case agentcap.StatusDenied, agentcap.StatusRejected:
				return nil, fmt.Errorf("%w: the call of %s was refused", ErrApprovalDenied, p.Capability)
			case agentcap.StatusExpired:
				return nil, fmt.Errorf("%w: no decision on the call of %s", ErrApprovalExpired, p.Capability)
			default:
				return nil, fmt.Errorf("client: unknown confirmation status %q", st.Status)
			}
		}
		if !deadline.IsZero() && !a.c.cfg.Now().Before(deadline) {
			return nil, fmt.Errorf("%w: no decision on the call of %s", ErrApprovalExpired, p.Capability)
		}
	}
}
