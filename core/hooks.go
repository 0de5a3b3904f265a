package core

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
)

// Phase is the moment a hook event describes.
type Phase string

// Hook phases.
const (
	// PhaseStart: the capability was found and execution begins.
	PhaseStart Phase = "start"
	// PhaseEnd: execution succeeded and the output was validated.
	PhaseEnd Phase = "end"
	// PhaseError: execution failed at Event.Stage.
	PhaseError Phase = "error"
)

// Event is what a hook observes. Fields are filled only when execution got
// that far: Input once the input stage passed, App once the context stage
// passed, Output and OutputJSON on PhaseEnd. Raw arguments and unvalidated
// output never appear in an event.
type Event struct {
	Phase Phase
	// Stage is StageLookup on start, StageOutput on end, and the failing
	// stage on error.
	Stage agentcap.Stage
	// Capability is the requested name. For an unknown capability it is the
	// name the caller sent.
	Capability string
	// Definition is nil when the lookup failed.
	Definition *Definition
	// Identity is the caller; nil for an anonymous or in-process call.
	Identity *auth.Identity
	// Duration is the time since execution began; 0 on start.
	Duration time.Duration
	Err      *agentcap.Error
	// App is the application context, once built.
	App any
	// Input is the validated, decoded input.
	Input any
	// Output is the validated result value, on end.
	Output any
	// OutputJSON is the validated encoded result, on end. It must not be
	// modified.
	OutputJSON json.RawMessage
	// Preview reports an event of a preview (Executor.Preview):
	// its end event has Stage StagePreview, and Output is the preview's
	// result.
	Preview bool
}

// Hook observes executions. Hooks are best-effort observers: a returned
// error or a panic is logged and never changes the result. Mandatory audit
// belongs inside the use case, not in a hook.
type Hook func(ctx context.Context, ev Event) error

// emit delivers ev to every hook, isolating the executor from their
// failures.
func emit(ctx context.Context, hooks []Hook, logger *slog.Logger, ev Event) {
	for _, h := range hooks {
		callHook(ctx, h, logger, ev)
	}
}

func callHook(ctx context.Context, h Hook, logger *slog.Logger, ev Event) {
	defer func() {
		if r := recover(); r != nil && logger != nil {
			logger.LogAttrs(ctx, slog.LevelError, "agentcap: hook panicked",
				slog.String("capability", ev.Capability), slog.String("phase", string(ev.Phase)),
				slog.String("panic", fmt.Sprint(r)))
		}
	}()
	if err := h(ctx, ev); err != nil && logger != nil {
		logger.LogAttrs(ctx, slog.LevelWarn, "agentcap: hook failed",
			slog.String("capability", ev.Capability), slog.String("phase", string(ev.Phase)),
			slog.String("error", err.Error()))
	}
}
