package mcpx

import (
	"context"
	"errors"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/core"
)

// executor returns the executor to run a call with, building it through
// the source if it is lazy.
func (s *Server) executor(ctx context.Context) (*core.Executor, error) {
	if s.exec != nil {
		return s.exec, nil
	}
	e, err := s.src.Executor(ctx)
	if err == nil && e == nil {
		err = errors.New("mcpx: the executor source returned no executor")
	}
	return e, err
}

// errStarting answers a call while no executor can be built, in the words
// of an HTTP execute at the same moment.
var errStarting = agentcap.Unavailable("the service is starting or cannot run capabilities right now; retry later", nil)

// unavailable answers a call while no executor can be built. The cause is
// logged, never sent.
func (s *Server) unavailable(ctx context.Context, name string, err error) *mcp.CallToolResult {
	if ctx.Err() == nil {
		s.logger.LogAttrs(ctx, slog.LevelError, "mcpx: building the executor failed",
			slog.String("capability", name), slog.String("error", err.Error()))
	}
	return s.errorResult(ctx, errStarting)
}
