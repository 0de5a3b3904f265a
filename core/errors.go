package core

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Code is a stable, snake_case error code. The codes defined in this package
// describe pipeline failures; an [AppError] carries an application's own code.
type Code string

// Pipeline error codes.
const (
	// CodeUnknownCapability: no capability of that name is registered.
	CodeUnknownCapability Code = "unknown_capability"
	// CodeInvalidInput: the arguments are not valid JSON, have unknown,
	// duplicate or case-variant keys, or fail the input schema.
	CodeInvalidInput Code = "invalid_input"
	// CodeForbidden: the caller may not run this capability.
	CodeForbidden Code = "forbidden"
	// CodeInvalidOutput: the handler's result does not fit the output
	// schema. The caller never sees the details.
	CodeInvalidOutput Code = "invalid_output"
	// CodeExecutionFailed: any unexpected failure, including panics. The
	// public message is generic; the cause stays on the server.
	CodeExecutionFailed Code = "execution_failed"
	// CodeCanceled: the caller's context was canceled.
	CodeCanceled Code = "canceled"
	// CodeTimeout: the capability's deadline passed.
	CodeTimeout Code = "timeout"
	// CodeTemporarilyUnavailable: a store the pipeline depends on (the
	// confirmation tokens', or the one a person's confirmation is asked
	// through) did not answer. The call did not run, its confirmation
	// token is not spent, and it may be sent again as it was after the
	// error's RetryAfter ([UnavailableRetryAfter]). Answered 503 with
	// Retry-After; never a way around the stage that failed.
	CodeTemporarilyUnavailable Code = "temporarily_unavailable"
)

// UnavailableRetryAfter is the wait that a CodeTemporarilyUnavailable
// error asks for: stores that fail over or restart are usually back
// within seconds, and a caller that waits longer loses nothing.
const UnavailableRetryAfter = time.Second

// Codes of long-running and repeatable calls (streams, jobs, idempotency
// keys). Their wire code is the code itself, except CodeBatchUnsupported,
// whose wire code is the one the Agent Auth reference server uses.
const (
	// CodeBatchUnsupported: a batch item names a capability that streams
	// or runs as a job; such a call must be executed on its own.
	CodeBatchUnsupported Code = "batch_unsupported"
	// CodeStreamExpired: a stream reached its maximum duration.
	CodeStreamExpired Code = "stream_expired"
	// CodeJobNotFound: no job of that id belongs to the caller.
	CodeJobNotFound Code = "job_not_found"
	// CodeCancelled: the job was cancelled by its owner.
	CodeCancelled Code = "cancelled"
	// CodeInstanceLost: the instance running the job stopped before it
	// finished (its lease expired, or it shut down).
	CodeInstanceLost Code = "instance_lost"
	// CodeInvalidIdempotencyKey: the Idempotency-Key value is empty, too
	// long or not printable ASCII.
	CodeInvalidIdempotencyKey Code = "invalid_idempotency_key"
	// CodeIdempotencyInProgress: the first call with this idempotency key
	// is still running.
	CodeIdempotencyInProgress Code = "idempotency_in_progress"
	// CodeIdempotencyKeyReused: the idempotency key was used before for
	// another capability or other arguments.
	CodeIdempotencyKeyReused Code = "idempotency_key_reused"
)

// Codes of previews and confirmations. Their wire code is the code
// itself.
const (
	// CodePreviewNotSupported: the capability has no preview.
	CodePreviewNotSupported Code = "preview_not_supported"
	// CodeConfirmationRequired: the call needs a confirmation token and
	// carries none. The error carries the preview (when the capability
	// has one) and a fresh confirmation.
	CodeConfirmationRequired Code = "confirmation_required"
	// CodeConfirmationMismatch: the token was issued for another
	// capability or other arguments.
	CodeConfirmationMismatch Code = "confirmation_mismatch"
	// CodeConfirmationExpired: the token's lifetime is over.
	CodeConfirmationExpired Code = "confirmation_expired"
	// CodeConfirmationUsed: the token confirmed a call already.
	CodeConfirmationUsed Code = "confirmation_used"
	// CodeInvalidConfirmation: the token is unknown, forged, or was
	// issued to another caller or for another location.
	CodeInvalidConfirmation Code = "invalid_confirmation"
	// CodeConfirmationPending: the call needs a person's confirmation,
	// which was asked for (see WithHumanConfirmation). Not a failure:
	// transports answer it 202, with where the person confirms
	// ("approval"), where to poll for the decision ("status_url") and
	// the preview the person is shown ("preview").
	CodeConfirmationPending Code = "confirmation_pending"
)

// Stage names a step of the execution pipeline. Stages run in the order
// lookup, input, authorize, context, audit, confirmation, handler, output;
// a preview runs preview instead of audit, confirmation and handler.
type Stage string

// Pipeline stages, in execution order.
const (
	StageLookup    Stage = "lookup"
	StageInput     Stage = "input"
	StageAuthorize Stage = "authorize"
	StageContext   Stage = "context"
	// StageConfirmation consumes the call's confirmation token, or asks
	// for one.
	StageConfirmation Stage = "confirmation"
	// StagePreview runs a preview handler, in previews and in executions
	// refused with CodeConfirmationRequired.
	StagePreview Stage = "preview"
	StageHandler Stage = "handler"
	StageOutput  Stage = "output"
)

// Wire codes used by the Agent Auth error envelope for pipeline codes.
const (
	WireCapabilityNotFound = "capability_not_found"
	WireInvalidRequest     = "invalid_request"
	WireUnauthorized       = "unauthorized"
	WireInternalError      = "internal_error"
	WireCanceled           = "canceled"
	WireTimeout            = "timeout"
	// WireBatchUnsupported is the wire code of CodeBatchUnsupported.
	WireBatchUnsupported = "batch_unsupported_result_type"
)

// StatusClientClosedRequest is the non-standard status used when the caller
// went away before the capability finished.
const StatusClientClosedRequest = 499

// codeTable is the single mapping from pipeline codes to HTTP statuses and
// Agent Auth wire codes. Every transport renders errors through it.
var codeTable = map[Code]struct {
	status int
	wire   string
}{
	CodeUnknownCapability: {http.StatusNotFound, WireCapabilityNotFound},
	CodeInvalidInput:      {http.StatusBadRequest, WireInvalidRequest},
	CodeForbidden:         {http.StatusForbidden, WireUnauthorized},
	CodeInvalidOutput:     {http.StatusInternalServerError, WireInternalError},
	CodeExecutionFailed:   {http.StatusInternalServerError, WireInternalError},
	CodeCanceled:          {StatusClientClosedRequest, WireCanceled},
	CodeTimeout:           {http.StatusGatewayTimeout, WireTimeout},

	CodeTemporarilyUnavailable: {http.StatusServiceUnavailable, string(CodeTemporarilyUnavailable)},

	CodeBatchUnsupported:      {http.StatusBadRequest, WireBatchUnsupported},
	CodeStreamExpired:         {http.StatusGatewayTimeout, string(CodeStreamExpired)},
	CodeJobNotFound:           {http.StatusNotFound, string(CodeJobNotFound)},
	CodeCancelled:             {http.StatusConflict, string(CodeCancelled)},
	CodeInstanceLost:          {http.StatusServiceUnavailable, string(CodeInstanceLost)},
	CodeInvalidIdempotencyKey: {http.StatusBadRequest, string(CodeInvalidIdempotencyKey)},
	CodeIdempotencyInProgress: {http.StatusConflict, string(CodeIdempotencyInProgress)},
	CodeIdempotencyKeyReused:  {http.StatusUnprocessableEntity, string(CodeIdempotencyKeyReused)},

	CodePreviewNotSupported:  {http.StatusBadRequest, string(CodePreviewNotSupported)},
	CodeConfirmationRequired: {http.StatusPreconditionRequired, string(CodeConfirmationRequired)},
	CodeConfirmationMismatch: {http.StatusConflict, string(CodeConfirmationMismatch)},
	CodeConfirmationExpired:  {http.StatusConflict, string(CodeConfirmationExpired)},
	CodeConfirmationUsed:     {http.StatusConflict, string(CodeConfirmationUsed)},
	CodeInvalidConfirmation:  {http.StatusForbidden, string(CodeInvalidConfirmation)},
	CodeConfirmationPending:  {http.StatusAccepted, string(CodeConfirmationPending)},

	CodeAuditUnavailable: {http.StatusServiceUnavailable, string(CodeAuditUnavailable)},
}

// Public messages for redacted failures.
const (
	msgInternal  = "internal error"
	msgCanceled  = "the request was canceled"
	msgTimeout   = "the capability did not finish in time"
	msgForbidden = "the caller may not run this capability"
)

// Violation is one schema or decoding failure, located by a JSON Pointer
// (RFC 6901) into the arguments. An empty Path means the whole value.
type Violation struct {
	// Path is the JSON Pointer of the offending value, "" for the whole
	// arguments value.
	Path string `json:"path"`
	// Message says what is wrong, in words safe to show to the caller.
	Message string `json:"message"`
}

// Error is the only error type the executor returns. Code, Stage, Message
// and Details are safe to show to a caller; the cause is not, and is only
// reachable through [errors.Unwrap], [errors.Is] and [errors.As].
type Error struct {
	// Code is a pipeline code or, for application errors, the
	// application's own code (internal_error when the application gave
	// none, see [AppError.WireCode]).
	Code Code
	// Stage is the pipeline stage that failed.
	Stage Stage
	// Message is the public, human-readable message.
	Message string
	// Details lists validation failures for CodeInvalidInput.
	Details []Violation

	app   *AppError
	cause error
	// fields are extra envelope members of a pipeline error
	// (CodeConfirmationRequired's preview and confirmation).
	fields map[string]any
	// retry is a pipeline error's RetryAfter.
	retry time.Duration
}

// Error implements error. It includes the hidden cause, for logs; transports
// must render Message instead.
func (e *Error) Error() string {
	s := fmt.Sprintf("agentcap: %s: %s: %s", e.Stage, e.Code, e.Message)
	if e.cause != nil && e.app == nil {
		s += ": " + e.cause.Error()
	}
	return s
}

// Unwrap returns the hidden cause.
func (e *Error) Unwrap() error { return e.cause }

// App returns the application error behind e, or nil.
func (e *Error) App() *AppError { return e.app }

// HTTPStatus returns the HTTP status for e from the code table, or the
// application error's own status.
func (e *Error) HTTPStatus() int {
	if e.app != nil {
		return e.app.HTTPStatus()
	}
	if row, ok := codeTable[e.Code]; ok {
		return row.status
	}
	return http.StatusInternalServerError
}

// WireCode returns the Agent Auth wire code for e: the table's entry for a
// pipeline code, or the application error's own code (see
// [AppError.WireCode]).
func (e *Error) WireCode() string {
	if e.app != nil {
		return e.app.WireCode()
	}
	if row, ok := codeTable[e.Code]; ok {
		return row.wire
	}
	return WireInternalError
}

// RetryAfter returns how long the caller should wait before trying again,
// as set by an application error or by the pipeline
// (CodeTemporarilyUnavailable); 0 when unset.
func (e *Error) RetryAfter() time.Duration {
	if e.app != nil && e.app.RetryAfter > 0 {
		return e.app.RetryAfter
	}
	return e.retry
}

// Fields returns extra members of the error envelope: those set by an
// application error (for example "violations"), or the "preview" (a
// json.RawMessage) and "confirmation" of CodeConfirmationRequired. The
// map must not be modified.
func (e *Error) Fields() map[string]any {
	if e.app != nil {
		return e.app.Fields
	}
	return e.fields
}

// HTTPStatus returns the HTTP status for a pipeline code. Unknown codes map
// to 500.
func HTTPStatus(code Code) int {
	if row, ok := codeTable[code]; ok {
		return row.status
	}
	return http.StatusInternalServerError
}

// WireCode returns the Agent Auth wire code for a pipeline code. Unknown
// codes map to "internal_error".
func WireCode(code Code) string {
	if row, ok := codeTable[code]; ok {
		return row.wire
	}
	return WireInternalError
}

// AppError is an application failure whose code, status and message may be
// shown to the caller. It is the only way a handler's own words reach an
// agent: every other error is redacted.
type AppError struct {
	// Status is the HTTP status, 400 to 599. Anything else renders as 500.
	Status int
	// Code is the application's stable snake_case code. An empty Code is
	// a mistake of the application; it renders as "internal_error"
	// (WireInternalError), so that an error envelope always names a code.
	Code string
	// Message is the public, human-readable message.
	Message string
	// Fields are extra members of the error envelope, such as
	// "violations". The keys "error" and "message" are reserved and ignored.
	Fields map[string]any
	// Cause is an optional hidden cause, kept for logs and errors.Is.
	Cause error
	// RetryAfter, when positive, tells the caller how long to wait before
	// trying again (HTTP transports send it as Retry-After, in whole
	// seconds rounded up). It suits 429 and 503 answers.
	RetryAfter time.Duration
}

// NewAppError returns an application error with the given status, code and
// public message.
func NewAppError(status int, code, message string) *AppError {
	return &AppError{Status: status, Code: code, Message: message}
}

// BadRequest returns a 400 application error.
func BadRequest(code, message string) *AppError {
	return NewAppError(http.StatusBadRequest, code, message)
}

// Unauthorized returns a 401 application error.
func Unauthorized(code, message string) *AppError {
	return NewAppError(http.StatusUnauthorized, code, message)
}

// Forbidden returns a 403 application error.
func Forbidden(code, message string) *AppError {
	return NewAppError(http.StatusForbidden, code, message)
}

// NotFound returns a 404 application error.
func NotFound(code, message string) *AppError {
	return NewAppError(http.StatusNotFound, code, message)
}

// Conflict returns a 409 application error.
func Conflict(code, message string) *AppError {
	return NewAppError(http.StatusConflict, code, message)
}

// UnprocessableEntity returns a 422 application error.
func UnprocessableEntity(code, message string) *AppError {
	return NewAppError(http.StatusUnprocessableEntity, code, message)
}

// TooManyRequests returns a 429 application error.
func TooManyRequests(code, message string) *AppError {
	return NewAppError(http.StatusTooManyRequests, code, message)
}

// Error implements error.
func (e *AppError) Error() string {
	if e.Cause != nil {
		return e.Code + ": " + e.Message + ": " + e.Cause.Error()
	}
	return e.Code + ": " + e.Message
}

// Unwrap returns the hidden cause.
func (e *AppError) Unwrap() error { return e.Cause }

// With returns a copy of e with an extra envelope member.
func (e *AppError) With(key string, value any) *AppError {
	c := *e
	c.Fields = make(map[string]any, len(e.Fields)+1)
	for k, v := range e.Fields {
		c.Fields[k] = v
	}
	c.Fields[key] = value
	return &c
}

// WithRetryAfter returns a copy of e that asks the caller to wait d before
// trying again.
func (e *AppError) WithRetryAfter(d time.Duration) *AppError {
	c := *e
	c.RetryAfter = d
	return &c
}

// WithCause returns a copy of e with a hidden cause.
func (e *AppError) WithCause(cause error) *AppError {
	c := *e
	c.Cause = cause
	return &c
}

// HTTPStatus returns the status an answer to e carries: Status, or 500
// when Status is not an error status (400 to 599).
func (e *AppError) HTTPStatus() int {
	if e.Status < 400 || e.Status > 599 {
		return http.StatusInternalServerError
	}
	return e.Status
}

// WireCode returns the code an error envelope for e carries: Code, or
// WireInternalError when Code is empty.
func (e *AppError) WireCode() string {
	if e.Code == "" {
		return WireInternalError
	}
	return e.Code
}

// classify turns any error raised at stage into an *Error. An *Error passes
// through unchanged; an *AppError anywhere in the chain keeps its code,
// status and message; context errors become canceled or timeout; everything
// else is redacted to fallback with a generic message.
func classify(err error, stage Stage, fallback Code) *Error {
	if err == nil {
		return nil
	}
	var ce *Error
	if errors.As(err, &ce) {
		if ce.Stage == stage {
			return ce
		}
		// An *Error from a nested execution is reported at this stage.
		c := *ce
		c.Stage = stage
		return &c
	}
	var ae *AppError
	if errors.As(err, &ae) {
		msg := ae.Message
		if msg == "" {
			msg = http.StatusText(ae.HTTPStatus())
		}
		return &Error{Code: Code(ae.WireCode()), Stage: stage, Message: msg, app: ae, cause: err}
	}
	// A panic is a failure of the code, never a refusal, whatever the stage.
	var pe *panicError
	if errors.As(err, &pe) {
		return &Error{Code: CodeExecutionFailed, Stage: stage, Message: msgInternal, cause: err}
	}
	switch {
	case errors.Is(err, ErrForbidden):
		return &Error{Code: CodeForbidden, Stage: stage, Message: msgForbidden, cause: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: CodeTimeout, Stage: stage, Message: msgTimeout, cause: err}
	case errors.Is(err, context.Canceled):
		return &Error{Code: CodeCanceled, Stage: stage, Message: msgCanceled, cause: err}
	}
	msg := msgInternal
	if fallback == CodeForbidden {
		msg = msgForbidden
	}
	return &Error{Code: fallback, Stage: stage, Message: msg, cause: err}
}

// ErrForbidden may be returned (or wrapped) by an authorize callback or a
// context resolver to refuse a call with CodeForbidden and a generic message.
var ErrForbidden = errors.New("agentcap: forbidden")

// NewError builds an *Error for transports and authorizers that fail before
// or around the executor, for example to report a malformed request in the
// same shape as executor errors.
func NewError(code Code, stage Stage, message string, details []Violation) *Error {
	return &Error{Code: code, Stage: stage, Message: message, Details: details}
}

var errNilExecutor = errors.New("agentcap: lazy build returned a nil executor")
