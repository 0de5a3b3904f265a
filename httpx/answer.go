package httpx

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentcap/agentcap/core"
)

// ErrorAnswer is an error answer as httpx renders it, for transports that
// share httpx's authenticators and error envelope (package mcpx, say) and
// must answer in the same words.
type ErrorAnswer struct {
	// Status is the HTTP status.
	Status int
	// Body is the error envelope {"error", "message", ...}, without a
	// trailing newline.
	Body []byte
	// RetryAfter, when positive, is the wait a Retry-After header names.
	RetryAfter time.Duration
	// Internal reports a failure whose cause the caller is not told and
	// which should be logged.
	Internal bool
}

// AnswerAuthError renders the answer httpx gives when an authenticator
// (Config.Authenticate) fails with err: ErrNoCredentials is 401
// authentication_required, ErrBadCredentials 401 invalid_jwt,
// ErrNotAllowed 403 unauthorized, a *core.AppError its own status and
// code, anything else a redacted 500. Members of an application error
// that cannot be encoded are dropped and logged on logger (nil discards
// them).
func AnswerAuthError(err error, logger *slog.Logger) ErrorAnswer {
	env, internal := authEnvelope(err)
	return renderAnswer(env, internal, logger)
}

// AnswerError renders the error envelope httpx answers an executor error
// with, with the status and code of core's table.
func AnswerError(err *core.Error, logger *slog.Logger) ErrorAnswer {
	return renderAnswer(envelopeOf(err), err.HTTPStatus() >= 500, logger)
}

func renderAnswer(env envelope, internal bool, logger *slog.Logger) ErrorAnswer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := handlerBase{logger: logger}
	return ErrorAnswer{
		Status:     env.status,
		Body:       h.appendEnvelope(context.Background(), nil, env, "error"),
		RetryAfter: env.retryAfter,
		Internal:   internal,
	}
}
