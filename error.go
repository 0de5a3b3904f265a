package agentcap

import (
	"errors"
	"fmt"
	"maps"
	"time"
)

// Stage names a step of the execution pipeline, in the order a call runs
// them: lookup, input, authorize, context, audit, confirmation, handler,
// output (a preview runs preview instead of audit, confirmation and
// handler). An error that did not come from the pipeline has no stage.
type Stage string

// Pipeline stages.
const (
	StageLookup    Stage = "lookup"
	StageInput     Stage = "input"
	StageAuthorize Stage = "authorize"
	StageContext   Stage = "context"
	// StageAudit writes the record of a call's start, for capabilities
	// whose audit trail is required.
	StageAudit Stage = "audit"
	// StageConfirmation spends the call's confirmation token, or asks for
	// one.
	StageConfirmation Stage = "confirmation"
	// StagePreview runs a capability's preview.
	StagePreview Stage = "preview"
	StageHandler Stage = "handler"
	StageOutput  Stage = "output"
)

// Violation is one failure of the arguments against their schema, located
// by a JSON Pointer (RFC 6901). An empty Path means the whole value.
type Violation struct {
	// Path is the JSON Pointer of the offending value.
	Path string `json:"path"`
	// Message says what is wrong, in words safe to show the caller.
	Message string `json:"message"`
}

// Error is the one error type of agentcap: a failure that may be shown to
// the caller, with a code from the one code set, a public message, and a
// hidden cause that only logs see. Capabilities return one to refuse a
// call in their own words (every other error of theirs reaches the caller
// as a redacted internal_error); the executor, the transports, the Agent
// Auth verifier and provider return nothing else.
type Error struct {
	// Code is the error code; its HTTP status is Code.HTTPStatus().
	Code Code
	// Message is the public, human-readable message.
	Message string
	// Stage is the pipeline stage that failed, "" outside the pipeline.
	Stage Stage
	// Details lists each violation of a CodeInvalidRequest (the answer's
	// "errors" member).
	Details []Violation
	// Fields are further members of the error answer ("violations",
	// "preview", "confirmation", ...), written in key order after the
	// envelope's own: a member named like the code's key or "message",
	// or "errors" when Details is set, is left out. Treat the map as
	// read-only; With returns a copy with one more.
	Fields map[string]any
	// RetryAfter, when positive, tells the caller how long to wait before
	// sending the request again (the Retry-After header, in whole seconds
	// rounded up).
	RetryAfter time.Duration

	cause error
}

// NewError returns an error with code and a public message.
func NewError(code Code, message string) *Error {
	return &Error{Code: code, Message: message}
}

// Wrap returns an error with code, a public message and a hidden cause,
// which logs see and the caller never does.
func Wrap(code Code, message string, cause error) *Error {
	return &Error{Code: code, Message: message, cause: cause}
}

// Errorf returns an error with code and a public message formatted as
// fmt.Sprintf does. The message is shown to the caller: never format a
// secret into it.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error implements error. It includes the hidden cause, for logs;
// answers carry Message only.
func (e *Error) Error() string {
	s := string(e.Code) + ": " + e.Message
	if e.Stage != "" {
		s = "agentcap: " + string(e.Stage) + ": " + s
	}
	if e.cause != nil {
		s += ": " + e.cause.Error()
	}
	return s
}

// Unwrap returns the hidden cause.
func (e *Error) Unwrap() error { return e.cause }

// HTTPStatus returns the status an answer to e carries, from its code.
func (e *Error) HTTPStatus() int { return e.Code.HTTPStatus() }

// With returns a copy of e with one more member of the error answer.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Fields = make(map[string]any, len(e.Fields)+1)
	maps.Copy(c.Fields, e.Fields)
	c.Fields[key] = value
	return &c
}

// WithCause returns a copy of e with a hidden cause, kept for logs and
// errors.Is, never shown to the caller.
func (e *Error) WithCause(cause error) *Error {
	c := *e
	c.cause = cause
	return &c
}

// WithRetryAfter returns a copy of e that asks the caller to wait d before
// trying again.
func (e *Error) WithRetryAfter(d time.Duration) *Error {
	c := *e
	c.RetryAfter = d
	return &c
}

// WithStage returns a copy of e reported at stage s.
func (e *Error) WithStage(s Stage) *Error {
	c := *e
	c.Stage = s
	return &c
}

// As returns the *Error in err's chain, or nil when there is none.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// CodeOf returns the code of the *Error in err's chain: "" for a nil
// error, CodeInternalError for an error without one.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	if e := As(err); e != nil {
		return e.Code
	}
	return CodeInternalError
}

// Public returns err as the caller may see it: the *Error in its chain,
// or, for any other error, a redacted internal_error whose hidden cause is
// err. A nil err is nil.
func Public(err error) *Error {
	if err == nil {
		return nil
	}
	if e := As(err); e != nil {
		return e
	}
	return Internal(err)
}

// Internal returns the redacted internal_error that hides cause.
func Internal(cause error) *Error {
	return &Error{Code: CodeInternalError, Message: "internal error", cause: cause}
}

// UnavailableRetryAfter is the wait a CodeTemporarilyUnavailable error
// asks for: stores that fail over or restart are usually back within
// seconds, and a caller that waits longer loses nothing.
const UnavailableRetryAfter = time.Second

// Unavailable returns the refusal of a request whose store or service did
// not answer: temporarily_unavailable with message, asking the caller to
// retry after UnavailableRetryAfter, the cause hidden. Nothing ran, so
// the same request may be sent again.
func Unavailable(message string, cause error) *Error {
	return &Error{Code: CodeTemporarilyUnavailable, Message: message, RetryAfter: UnavailableRetryAfter, cause: cause}
}
