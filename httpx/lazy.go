package httpx

import (
	"context"
	"errors"
	"log/slog"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/core"
)

// errStarting answers an execution while no executor can be built: a
// failed build is tried again by the next call, so a short wait is
// enough.
var errStarting = agentcap.Unavailable("the service is starting or cannot run capabilities right now; retry later", nil)

// executor returns the executor to run with, building it through the
// source if it is lazy. A build that fails, or that the caller stopped
// waiting for, is answered 503 temporarily_unavailable; the cause is
// logged, never sent.
func (h *Handler) executor(ctx context.Context) (*core.Executor, *agentcap.Error) {
	if h.exec != nil {
		return h.exec, nil
	}
	e, err := h.src.Executor(ctx)
	if err == nil && e != nil {
		return e, nil
	}
	if err == nil {
		err = errors.New("httpx: the executor source returned no executor")
	}
	if ctx.Err() == nil {
		h.logger.LogAttrs(ctx, slog.LevelError, "agentcap: building the executor failed", slog.String("error", err.Error()))
	}
	return nil, errStarting
}
