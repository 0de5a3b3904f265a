package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentcap/agentcap"
)

// Public messages for redacted failures.
const (
	msgInternal  = "internal error"
	msgCanceled  = "the request was canceled"
	msgTimeout   = "the capability did not finish in time"
	msgForbidden = "the caller may not run this capability"
)

// classify turns any error raised at stage into an *agentcap.Error. An
// *agentcap.Error anywhere in the chain keeps its code (internal_error
// when it names none), message and members, reported at stage; context
// errors become cancelled or timeout; ErrForbidden becomes unauthorized;
// everything else, a panic included, is redacted to fallback with a
// generic message, the error kept as the hidden cause.
func classify(err error, stage agentcap.Stage, fallback agentcap.Code) *agentcap.Error {
	if err == nil {
		return nil
	}
	// A panic is a failure of the code, never a refusal, whatever the stage
	// and whatever it carried.
	var pe *panicError
	if errors.As(err, &pe) {
		return internalAt(stage, err)
	}
	if ce := agentcap.As(err); ce != nil {
		if ce == err && ce.Stage == stage && ce.Code != "" {
			return ce
		}
		c := ce.WithStage(stage)
		if c.Code == "" {
			// An error that names no code is a mistake of the application:
			// it is answered as internal_error, so that no answer names an
			// empty code.
			c.Code = agentcap.CodeInternalError
		}
		if ce != err && errors.Unwrap(ce) == nil {
			// Keep the wrapping around the error for logs and errors.Is.
			c = c.WithCause(err)
		}
		return c
	}
	switch {
	case errors.Is(err, ErrForbidden):
		return newErr(agentcap.CodeUnauthorized, stage, msgForbidden, err)
	case errors.Is(err, context.DeadlineExceeded):
		return newErr(agentcap.CodeTimeout, stage, msgTimeout, err)
	case errors.Is(err, context.Canceled):
		return newErr(agentcap.CodeCancelled, stage, msgCanceled, err)
	}
	msg := msgInternal
	if fallback == agentcap.CodeUnauthorized {
		msg = msgForbidden
	}
	return newErr(fallback, stage, msg, err)
}

// newErr returns an error of the pipeline: code at stage, with a public
// message and a hidden cause (nil for none).
func newErr(code agentcap.Code, stage agentcap.Stage, message string, cause error) *agentcap.Error {
	e := agentcap.Wrap(code, message, cause)
	e.Stage = stage
	return e
}

// internalAt is the redacted internal_error of a failure at stage.
func internalAt(stage agentcap.Stage, cause error) *agentcap.Error {
	return newErr(agentcap.CodeInternalError, stage, msgInternal, cause)
}

// ErrForbidden may be returned (or wrapped) by a context resolver to refuse
// a call with unauthorized and a generic message.
var ErrForbidden = errors.New("agentcap: forbidden")

// panicError is the hidden cause of a recovered panic.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v\n%s", p.value, p.stack) }
