package httpx

import (
	"context"
	"log/slog"

	"github.com/agentcap/agentcap"
)

// Refusals of the handler's own, shared by every answer that needs one.
var (
	errNoRoute    = agentcap.NewError(agentcap.CodeNotFound, "no such endpoint")
	errNotJSON    = agentcap.NewError(agentcap.CodeUnsupportedMediaType, "the body must be JSON (Content-Type: application/json)")
	errUnreadable = agentcap.NewError(agentcap.CodeInvalidRequest, "the request body cannot be read or decoded")
	errInternal   = agentcap.NewError(agentcap.CodeInternalError, "internal error")
)

// authError is the answer to a verifier's refusal: the *agentcap.Error it
// returned, or a redacted internal error. The bool reports an error whose
// cause must be logged because the caller will not see it.
func authError(err error) (*agentcap.Error, bool) {
	if e := agentcap.As(err); e != nil {
		return e, e.HTTPStatus() >= 500
	}
	return errInternal, true
}

// appendError renders e's envelope with the one writer, logging a member
// that cannot be encoded rather than failing the whole answer.
func (h *handlerBase) appendError(ctx context.Context, dst []byte, e *agentcap.Error, codeKey string) []byte {
	dst, err := agentcap.AppendError(dst, e, codeKey)
	if err != nil {
		h.logger.LogAttrs(ctx, slog.LevelError, "agentcap: dropping error members that cannot be encoded",
			slog.String("code", string(e.Code)), slog.String("error", err.Error()))
	}
	return dst
}

// logFailure records what a caller is not told: the hidden cause of an
// internal error, an unavailable store or a timeout. Refusals (an
// application's own included) are the caller's business and stay out of
// the error log.
func (h *handlerBase) logFailure(ctx context.Context, capability string, err *agentcap.Error) {
	switch {
	case err.Code == agentcap.CodeTimeout:
		h.logger.LogAttrs(ctx, slog.LevelWarn, "agentcap: capability timed out",
			slog.String("capability", capability), slog.String("stage", string(err.Stage)))
	case err.Code == agentcap.CodeCancelled || err.HTTPStatus() < 500 || err.Unwrap() == nil:
	default:
		h.logger.LogAttrs(ctx, slog.LevelError, "agentcap: capability failed",
			slog.String("capability", capability), slog.String("code", string(err.Code)),
			slog.String("stage", string(err.Stage)), slog.String("error", err.Error()))
	}
}
