package mcpx

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

// executor returns the executor to run a call with, building it through
// the source if it is lazy.
func (s *Server[C, P]) executor(ctx context.Context) (*core.Executor[C, P], error) {
	if s.exec != nil {
		return s.exec, nil
	}
	e, err := s.src.Get(ctx)
	if err == nil && e == nil {
		err = errors.New("mcpx: the executor source returned no executor")
	}
	return e, err
}

// unavailable answers a call while no executor can be built: an error
// result with the envelope httpx answers the same moment with. The cause
// is logged, never sent.
func (s *Server[C, P]) unavailable(ctx context.Context, name string, err error) *mcp.CallToolResult {
	if ctx.Err() == nil {
		s.logger.LogAttrs(ctx, slog.LevelError, "mcpx: building the executor failed",
			slog.String("capability", name), slog.String("error", err.Error()))
	}
	ans := httpx.AnswerUnavailable()
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: string(ans.Body)}},
		IsError: true,
		Meta:    mcp.Meta{MetaError: json.RawMessage(ans.Body)},
	}
}
