package agentcap

import (
	"fmt"
	"net/http"
	"regexp"
	"sync"
)

// Code is a stable snake_case error code: the "error" member of an error
// answer. The codes declared in this package are the kit's own, one
// spelling each, and each has one HTTP status ([Code.HTTPStatus]). An
// application adds codes of its own with [NewCode], each answered with the
// status of a kit code.
type Code string

// Codes of requests and of the execution pipeline.
const (
	// CodeInvalidRequest: the request is malformed, or the arguments are
	// not valid JSON, have unknown, duplicate or case-variant keys, or fail
	// the input schema (the "errors" member lists each violation). 400.
	CodeInvalidRequest Code = "invalid_request"
	// CodeCapabilityNotFound: no capability of that name is registered,
	// or the caller may not see it. 404.
	CodeCapabilityNotFound Code = "capability_not_found"
	// CodeUnauthorized: the caller may not do this. 403.
	CodeUnauthorized Code = "unauthorized"
	// CodeInternalError: anything unexpected, a panic or a result that
	// does not fit its schema included. The message is generic; the
	// cause stays on the server. 500.
	CodeInternalError Code = "internal_error"
	// CodeCancelled: the call ended because its caller went away, or its
	// owner cancelled the job it ran as. 499 (the caller is usually gone).
	CodeCancelled Code = "cancelled"
	// CodeTimeout: the capability's deadline passed. 504.
	CodeTimeout Code = "timeout"
	// CodeTemporarilyUnavailable: a store or service the request depends
	// on did not answer. Nothing ran; the request may be sent again as it
	// was after the error's RetryAfter. 503.
	CodeTemporarilyUnavailable Code = "temporarily_unavailable"
	// CodeAuditUnavailable: the record of a call's start could not be
	// written for a capability whose audit trail is required, so the call
	// did not run. 503.
	CodeAuditUnavailable Code = "audit_unavailable"
	// CodeNotFound: no route or record of that name. 404.
	CodeNotFound Code = "not_found"
	// CodeMethodNotAllowed: the route does not take that method. 405.
	CodeMethodNotAllowed Code = "method_not_allowed"
	// CodeUnsupportedMediaType: the body is not of a content type the
	// route reads. 415.
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	// CodeRequestTooLarge: the body exceeds the route's limit. 413.
	CodeRequestTooLarge Code = "request_too_large"
	// CodeForbiddenOrigin: a browser request from an origin the endpoint
	// does not trust. 403.
	CodeForbiddenOrigin Code = "forbidden_origin"
	// CodeConflict: the request cannot be carried out in the record's
	// present state. 409.
	CodeConflict Code = "conflict"
)

// Codes of streams, jobs and idempotency keys.
const (
	// CodeBatchUnsupported: a batch item names a capability that streams
	// or runs as a job, which must be executed on its own. Its spelling is
	// the Agent Auth reference server's. 400.
	CodeBatchUnsupported Code = "batch_unsupported_result_type"
	// CodeStreamExpired: a stream reached its maximum duration. 504.
	CodeStreamExpired Code = "stream_expired"
	// CodeJobNotFound: no job of that id belongs to the caller. 404.
	CodeJobNotFound Code = "job_not_found"
	// CodeInstanceLost: the instance running a job stopped before it
	// finished. 503.
	CodeInstanceLost Code = "instance_lost"
	// CodeInvalidIdempotencyKey: the Idempotency-Key value is empty, too
	// long or not printable ASCII. 400.
	CodeInvalidIdempotencyKey Code = "invalid_idempotency_key"
	// CodeIdempotencyInProgress: the first call with this idempotency key
	// is still running. 409.
	CodeIdempotencyInProgress Code = "idempotency_in_progress"
	// CodeIdempotencyKeyReused: the idempotency key was used before for
	// another capability or other arguments. 422.
	CodeIdempotencyKeyReused Code = "idempotency_key_reused"
)

// Codes of previews and confirmations (see docs/confirmation.md).
const (
	// CodePreviewNotSupported: the capability has no preview. 400.
	CodePreviewNotSupported Code = "preview_not_supported"
	// CodeConfirmationRequired: the call needs a confirmation token and
	// carries none; the answer carries the preview and a fresh
	// confirmation. 428.
	CodeConfirmationRequired Code = "confirmation_required"
	// CodeConfirmationMismatch: the token was issued for another
	// capability or other arguments. 409.
	CodeConfirmationMismatch Code = "confirmation_mismatch"
	// CodeConfirmationExpired: the token's lifetime is over. 409.
	CodeConfirmationExpired Code = "confirmation_expired"
	// CodeConfirmationUsed: the token confirmed a call already. 409.
	CodeConfirmationUsed Code = "confirmation_used"
	// CodeInvalidConfirmation: the token is unknown, forged, or was issued
	// to another caller or for another location. 403.
	CodeInvalidConfirmation Code = "invalid_confirmation"
	// CodeConfirmationPending: a person was asked to confirm the call. Not
	// a failure: the answer says where the person confirms ("approval")
	// and where to poll ("status_url"). 202.
	CodeConfirmationPending Code = "confirmation_pending"
	// CodeConfirmationDenied: the person refused the call. 403.
	CodeConfirmationDenied Code = "confirmation_denied"
	// CodeConfirmationNotFound: no confirmation of that id is waiting for
	// the caller. 404.
	CodeConfirmationNotFound Code = "confirmation_not_found"
	// CodeConfirmationDeclined: the user declined, through the MCP client,
	// to confirm a call. 403.
	CodeConfirmationDeclined Code = "confirmation_declined"
)

// Codes of the Agent Auth Protocol (§5.13) at a capability location.
const (
	// CodeAuthenticationRequired: the request carries no credentials where
	// they are required. 401, with a challenge.
	CodeAuthenticationRequired Code = "authentication_required"
	// CodeInvalidJWT: a malformed, expired, replayed or wrongly signed
	// token, or one of the wrong type or audience. 401.
	CodeInvalidJWT Code = "invalid_jwt"
	// CodeCapabilityNotGranted: no active grant covers the call. 403.
	CodeCapabilityNotGranted Code = "capability_not_granted"
	// CodeConstraintViolated: the arguments are outside the grant's
	// constraints (the "violations" member lists each). 403.
	CodeConstraintViolated Code = "constraint_violated"
	// CodeUnknownConstraintOperator: a grant holds an operator the server
	// does not know. 400.
	CodeUnknownConstraintOperator Code = "unknown_constraint_operator"
	// CodeAgentRevoked, CodeAgentExpired, CodeAgentPending,
	// CodeAgentRejected and CodeAgentClaimed: the agent is not active. 403.
	CodeAgentRevoked  Code = "agent_revoked"
	CodeAgentExpired  Code = "agent_expired"
	CodeAgentPending  Code = "agent_pending"
	CodeAgentRejected Code = "agent_rejected"
	CodeAgentClaimed  Code = "agent_claimed"
	// CodeHostRevoked and CodeHostPending: the agent's host is not
	// active. 403.
	CodeHostRevoked Code = "host_revoked"
	CodeHostPending Code = "host_pending"
	// CodeRateLimited: too many requests; the answer says when to retry.
	// 429.
	CodeRateLimited Code = "rate_limited"
)

// Codes of an Agent Auth provider's endpoints.
const (
	// CodeUnsupportedMode: the agent mode is not accepted. 400.
	CodeUnsupportedMode Code = "unsupported_mode"
	// CodeUnsupportedAlgorithm: the key's algorithm is not accepted. 400.
	CodeUnsupportedAlgorithm Code = "unsupported_algorithm"
	// CodeInvalidCapabilities: a requested capability is unknown or
	// malformed. 400.
	CodeInvalidCapabilities Code = "invalid_capabilities"
	// CodeAgentExists: an agent with that key is registered already. 409.
	CodeAgentExists Code = "agent_exists"
	// CodeAlreadyGranted: every requested capability is granted already.
	// 409.
	CodeAlreadyGranted Code = "already_granted"
	// CodeAgentNotFound, CodeHostNotFound, CodeGrantNotFound and
	// CodeApprovalNotFound: no such record of the caller's. 404.
	CodeAgentNotFound    Code = "agent_not_found"
	CodeHostNotFound     Code = "host_not_found"
	CodeGrantNotFound    Code = "grant_not_found"
	CodeApprovalNotFound Code = "approval_not_found"
	// CodeApprovalClosed: the approval request was decided or has
	// expired. 410.
	CodeApprovalClosed Code = "approval_closed"
	// CodeAbsoluteLifetimeExceeded: the agent has lived as long as it may
	// and cannot be reactivated. 403.
	CodeAbsoluteLifetimeExceeded Code = "absolute_lifetime_exceeded"
	// CodeAuthorizationPending: the user has not decided yet; poll again
	// after the interval (RFC 8628). 400.
	CodeAuthorizationPending Code = "authorization_pending"
	// CodeSlowDown: polling too often (RFC 8628). 400.
	CodeSlowDown Code = "slow_down"
	// CodeAccessDenied: the user refused the request. 403.
	CodeAccessDenied Code = "access_denied"
	// CodeExpiredToken: the approval request expired before a decision
	// (RFC 8628). 400.
	CodeExpiredToken Code = "expired_token"
	// CodePresenceRequired: the decision needs the user's presence step.
	// 403.
	CodePresenceRequired Code = "presence_required"
	// CodeReauthenticationRequired: the user's sign-in is too old for this
	// decision. 403.
	CodeReauthenticationRequired Code = "reauthentication_required"
	// CodeCSRFFailed: a form or user API request without a valid
	// anti-forgery token. 403.
	CodeCSRFFailed Code = "csrf_failed"
	// CodeKeyInUse: the key was rotated concurrently or belongs to another
	// host. 409.
	CodeKeyInUse Code = "key_in_use"
)

// CodeClientError is the code the command-line client's MCP bridge
// reports for a failure of its own (no answer from the server, a key it
// cannot read). 500.
const CodeClientError Code = "client_error"

// StatusClientClosedRequest is the status of CodeCancelled: the caller went
// away before the answer (a status that no standard one describes).
const StatusClientClosedRequest = 499

// statuses is the one table from code to HTTP status.
var statuses = map[Code]int{
	CodeInvalidRequest:         http.StatusBadRequest,
	CodeCapabilityNotFound:     http.StatusNotFound,
	CodeUnauthorized:           http.StatusForbidden,
	CodeInternalError:          http.StatusInternalServerError,
	CodeCancelled:              StatusClientClosedRequest,
	CodeTimeout:                http.StatusGatewayTimeout,
	CodeTemporarilyUnavailable: http.StatusServiceUnavailable,
	CodeAuditUnavailable:       http.StatusServiceUnavailable,
	CodeNotFound:               http.StatusNotFound,
	CodeMethodNotAllowed:       http.StatusMethodNotAllowed,
	CodeUnsupportedMediaType:   http.StatusUnsupportedMediaType,
	CodeRequestTooLarge:        http.StatusRequestEntityTooLarge,
	CodeForbiddenOrigin:        http.StatusForbidden,
	CodeConflict:               http.StatusConflict,

	CodeBatchUnsupported:      http.StatusBadRequest,
	CodeStreamExpired:         http.StatusGatewayTimeout,
	CodeJobNotFound:           http.StatusNotFound,
	CodeInstanceLost:          http.StatusServiceUnavailable,
	CodeInvalidIdempotencyKey: http.StatusBadRequest,
	CodeIdempotencyInProgress: http.StatusConflict,
	CodeIdempotencyKeyReused:  http.StatusUnprocessableEntity,

	CodePreviewNotSupported:  http.StatusBadRequest,
	CodeConfirmationRequired: http.StatusPreconditionRequired,
	CodeConfirmationMismatch: http.StatusConflict,
	CodeConfirmationExpired:  http.StatusConflict,
	CodeConfirmationUsed:     http.StatusConflict,
	CodeInvalidConfirmation:  http.StatusForbidden,
	CodeConfirmationPending:  http.StatusAccepted,
	CodeConfirmationDenied:   http.StatusForbidden,
	CodeConfirmationNotFound: http.StatusNotFound,
	CodeConfirmationDeclined: http.StatusForbidden,

	CodeAuthenticationRequired:    http.StatusUnauthorized,
	CodeInvalidJWT:                http.StatusUnauthorized,
	CodeCapabilityNotGranted:      http.StatusForbidden,
	CodeConstraintViolated:        http.StatusForbidden,
	CodeUnknownConstraintOperator: http.StatusBadRequest,
	CodeAgentRevoked:              http.StatusForbidden,
	CodeAgentExpired:              http.StatusForbidden,
	CodeAgentPending:              http.StatusForbidden,
	CodeAgentRejected:             http.StatusForbidden,
	CodeAgentClaimed:              http.StatusForbidden,
	CodeHostRevoked:               http.StatusForbidden,
	CodeHostPending:               http.StatusForbidden,
	CodeRateLimited:               http.StatusTooManyRequests,

	CodeUnsupportedMode:          http.StatusBadRequest,
	CodeUnsupportedAlgorithm:     http.StatusBadRequest,
	CodeInvalidCapabilities:      http.StatusBadRequest,
	CodeAgentExists:              http.StatusConflict,
	CodeAlreadyGranted:           http.StatusConflict,
	CodeAgentNotFound:            http.StatusNotFound,
	CodeHostNotFound:             http.StatusNotFound,
	CodeGrantNotFound:            http.StatusNotFound,
	CodeApprovalNotFound:         http.StatusNotFound,
	CodeApprovalClosed:           http.StatusGone,
	CodeAbsoluteLifetimeExceeded: http.StatusForbidden,
	CodeAuthorizationPending:     http.StatusBadRequest,
	CodeSlowDown:                 http.StatusBadRequest,
	CodeAccessDenied:             http.StatusForbidden,
	CodeExpiredToken:             http.StatusBadRequest,
	CodePresenceRequired:         http.StatusForbidden,
	CodeReauthenticationRequired: http.StatusForbidden,
	CodeCSRFFailed:               http.StatusForbidden,
	CodeKeyInUse:                 http.StatusConflict,

	CodeClientError: http.StatusInternalServerError,
}

// appCodes holds the codes declared with NewCode: each maps to the kit
// code whose status it is answered with.
var appCodes sync.Map // Code -> Code

// HTTPStatus returns the HTTP status an answer with code c carries: the
// table's entry for a kit code, the status of its kit code for an
// application's code declared with NewCode, and 500 for any other.
func (c Code) HTTPStatus() int {
	if s, ok := statuses[c]; ok {
		return s
	}
	if like, ok := appCodes.Load(c); ok {
		return statuses[like.(Code)]
	}
	return http.StatusInternalServerError
}

// Known reports whether c is one of the kit's codes or an application's
// code declared with NewCode.
func (c Code) Known() bool {
	if _, ok := statuses[c]; ok {
		return true
	}
	_, ok := appCodes.Load(c)
	return ok
}

var codePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// NewCode declares an application's own error code, answered with the
// HTTP status of the kit code like (an "account_not_found" like
// CodeNotFound is answered 404, say). Declare each code once, in a
// package-level variable:
//
//	var CodeInsufficientFunds = agentcap.NewCode("insufficient_funds", agentcap.CodeConflict)
//
// NewCode panics when name is not snake_case (a lower-case letter, then
// lower-case letters, digits and underscores, at most 64 bytes), names a
// kit code, was declared before with another like, or when like is not a
// kit code: these are mistakes of the program, found at start.
func NewCode(name string, like Code) Code {
	c := Code(name)
	if !codePattern.MatchString(name) {
		panic(fmt.Sprintf("agentcap: NewCode(%q): a code is snake_case, at most 64 bytes", name))
	}
	if _, ok := statuses[c]; ok {
		panic(fmt.Sprintf("agentcap: NewCode(%q): the kit declares that code already", name))
	}
	if _, ok := statuses[like]; !ok {
		panic(fmt.Sprintf("agentcap: NewCode(%q, %q): %q is not a kit code", name, like, like))
	}
	if prev, loaded := appCodes.LoadOrStore(c, like); loaded && prev.(Code) != like {
		panic(fmt.Sprintf("agentcap: NewCode(%q): declared before like %q", name, prev))
	}
	return c
}
