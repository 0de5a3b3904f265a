package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/agentcap/agentcap/core"
)

// Authentication failures. An authenticator returns one of them (wrapped
// with its cause, if it likes) to choose how the failure is answered.
var (
	// ErrNoCredentials means the request carries no credentials at all. It
	// is answered 401 authentication_required with the challenge, except
	// on list and describe when anonymous discovery is allowed.
	ErrNoCredentials = errors.New("httpx: no credentials")
	// ErrBadCredentials means credentials were sent but cannot be used:
	// malformed, expired, wrongly signed or meant for another audience. It
	// is answered 401 invalid_jwt with the challenge.
	ErrBadCredentials = errors.New("httpx: invalid credentials")
	// ErrNotAllowed means the credentials are valid but the caller may not
	// use this surface at all. It is answered 403 unauthorized.
	ErrNotAllowed = errors.New("httpx: not allowed")
)

// Wire codes httpx adds to core's table.
const (
	wireAuthRequired     = "authentication_required"
	wireInvalidJWT       = "invalid_jwt"
	wireNotFound         = "not_found"
	wireMethodNotAllowed = "method_not_allowed"
	wireUnsupportedType  = "unsupported_media_type"
	wireTooLarge         = "request_too_large"
)

// envelope is an error answer before rendering.
type envelope struct {
	status  int
	code    string
	message string
	details []core.Violation
	fields  map[string]any
	// retryAfter, when positive, becomes a Retry-After header.
	retryAfter time.Duration
	// unkept marks an answer that an idempotency key must not keep
	// whatever its status (see storable).
	unkept bool
}

// envelopeOf renders e. A refusal of the confirmation stage judges the
// token the call carried, not the call, so an idempotency key never
// keeps it: the same key may be retried with a token.
func envelopeOf(e *core.Error) envelope {
	return envelope{status: e.HTTPStatus(), code: e.WireCode(), message: e.Message, details: e.Details, fields: e.Fields(),
		retryAfter: e.RetryAfter(), unkept: e.Stage == core.StageConfirmation}
}

func appEnvelope(ae *core.AppError) envelope {
	status := ae.HTTPStatus()
	msg := ae.Message
	if msg == "" {
		msg = http.StatusText(status)
	}
	return envelope{status: status, code: ae.WireCode(), message: msg, fields: ae.Fields, retryAfter: ae.RetryAfter}
}

var internalEnvelope = envelope{status: http.StatusInternalServerError, code: core.WireInternalError, message: "internal error"}

// authEnvelope maps an authenticator's error. The bool reports an error
// whose cause must be logged because the caller will not see it.
func authEnvelope(err error) (envelope, bool) {
	var ae *core.AppError
	if errors.As(err, &ae) {
		return appEnvelope(ae), false
	}
	var ce *core.Error
	if errors.As(err, &ce) {
		return envelopeOf(ce), ce.HTTPStatus() >= 500
	}
	switch {
	case errors.Is(err, ErrNoCredentials):
		return envelope{status: http.StatusUnauthorized, code: wireAuthRequired, message: "authentication is required"}, false
	case errors.Is(err, ErrBadCredentials):
		return envelope{status: http.StatusUnauthorized, code: wireInvalidJWT, message: "the credentials are invalid"}, false
	case errors.Is(err, ErrNotAllowed):
		return envelope{status: http.StatusForbidden, code: core.WireUnauthorized, message: "the caller may not use this endpoint"}, false
	}
	return internalEnvelope, true
}

// appendEnvelope renders {"error", "message", "errors"?, extra members in
// key order}. Extra members that cannot be encoded are dropped and logged
// rather than failing the whole answer.
func (h *handlerBase) appendEnvelope(ctx context.Context, dst []byte, env envelope, codeKey string) []byte {
	dst = append(dst, '{')
	dst = appendKey(dst, codeKey, true)
	dst = appendString(dst, env.code)
	dst = appendKey(dst, "message", false)
	dst = appendString(dst, env.message)
	if len(env.details) > 0 {
		dst = appendKey(dst, "errors", false)
		dst = append(dst, '[')
		for i, v := range env.details {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"path":`...)
			dst = appendString(dst, v.Path)
			dst = append(dst, `,"message":`...)
			dst = appendString(dst, v.Message)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if len(env.fields) > 0 {
		keys := make([]string, 0, len(env.fields))
		for k := range env.fields {
			if k != codeKey && k != "message" && !(k == "errors" && len(env.details) > 0) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			raw, err := json.Marshal(env.fields[k])
			if err != nil {
				h.logger.LogAttrs(ctx, slog.LevelError, "agentcap: dropping an error member that cannot be encoded",
					slog.String("member", k), slog.String("error", err.Error()))
				continue
			}
			dst = appendKey(dst, k, false)
			dst = append(dst, raw...)
		}
	}
	return append(dst, '}')
}

// logFailure records what a caller is not told: the hidden cause of an
// internal error or a timeout. Application errors and client mistakes are
// the caller's business and stay out of the error log.
func (h *handlerBase) logFailure(ctx context.Context, capability string, err *core.Error) {
	if err.App() != nil {
		return
	}
	switch err.Code {
	case core.CodeExecutionFailed, core.CodeInvalidOutput:
		h.logger.LogAttrs(ctx, slog.LevelError, "agentcap: capability failed",
			slog.String("capability", capability), slog.String("code", string(err.Code)),
			slog.String("stage", string(err.Stage)), slog.String("error", err.Error()))
	case core.CodeTimeout:
		h.logger.LogAttrs(ctx, slog.LevelWarn, "agentcap: capability timed out",
			slog.String("capability", capability), slog.String("stage", string(err.Stage)))
	default:
		if err.HTTPStatus() >= 500 && err.Code != core.CodeCanceled {
			h.logger.LogAttrs(ctx, slog.LevelError, "agentcap: capability failed",
				slog.String("capability", capability), slog.String("code", string(err.Code)),
				slog.String("stage", string(err.Stage)), slog.String("error", err.Error()))
		}
	}
}
