package httpx

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/agentcap/agentcap/core"
)

// wireUnavailable answers an execution while no executor can be built,
// and one whose idempotency key cannot be claimed.
const wireUnavailable = string(core.CodeTemporarilyUnavailable)

// unavailableRetry is the Retry-After of those answers: a failed build is
// tried again by the next call, so a short wait is enough.
const unavailableRetry = core.UnavailableRetryAfter

// executor returns the executor to run with, building it through the
// source if it is lazy. A build that fails, or that the caller stopped
// waiting for, is answered 503 temporarily_unavailable; the cause is
// logged, never sent.
func (h *Handler[C, P]) executor(ctx context.Context) (exec *core.Executor[C, P], env *envelope) {
	if h.exec != nil {
		return h.exec, nil
	}
	e, err := h.src.Get(ctx)
	if err == nil && e != nil {
		return e, nil
	}
	if err == nil {
		err = errors.New("httpx: the executor source returned no executor")
	}
	if ctx.Err() == nil {
		h.logger.LogAttrs(ctx, slog.LevelError, "agentcap: building the executor failed", slog.String("error", err.Error()))
	}
	unavailable := unavailableEnvelope
	return nil, &unavailable
}

// unavailableEnvelope answers an execution while no executor can be
// built.
var unavailableEnvelope = envelope{status: http.StatusServiceUnavailable, code: wireUnavailable,
	message: "the service is starting or cannot run capabilities right now; retry later", retryAfter: unavailableRetry}

// AnswerUnavailable renders the answer httpx gives an execution while its
// lazy executor cannot be built (503 temporarily_unavailable with
// Retry-After), for other transports over the same executor source
// (package mcpx) to answer in the same words.
func AnswerUnavailable() ErrorAnswer {
	return renderAnswer(unavailableEnvelope, false, nil)
}
