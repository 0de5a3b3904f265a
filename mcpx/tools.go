package mcpx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/internal/listcursor"
	"github.com/agentcap/agentcap/internal/mcpschema"
)

// Method names the server answers itself.
const (
	methodListTools = "tools/list"
	methodCallTool  = "tools/call"
)

// middleware answers tools/list and tools/call from the executor and
// passes every other method (initialize, server/discover, ping, ...) to
// the SDK. The SDK's own tool table stays empty: which tools exist
// depends on who asks.
func (s *Server) middleware(fixed **auth.Identity) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case methodListTools:
				r, ok := req.(*mcp.ListToolsRequest)
				if !ok {
					break
				}
				id, err := s.identity(req, fixed)
				if err != nil {
					return nil, s.internal(ctx, err)
				}
				return s.listTools(ctx, id, r.Params)
			case methodCallTool:
				r, ok := req.(*mcp.CallToolRequest)
				if !ok {
					break
				}
				id, err := s.identity(req, fixed)
				if err != nil {
					return nil, s.internal(ctx, err)
				}
				if err := s.checkCall(ctx, id, r); err != nil {
					return nil, err
				}
				if _, known := s.reg.Lookup(r.Params.Name); !known {
					// The executor records the attempt and refuses it.
					return s.callTool(ctx, id, r)
				}
				// A known tool runs through the SDK's own tools/call,
				// where a result that asks the client for input (the
				// user's confirmation) is sent or fulfilled as the
				// client's protocol version wants.
				return next(context.WithValue(ctx, identityCtxKey{}, id), method, req)
			}
			return next(ctx, method, req)
		}
	}
}

// internal logs err and returns the protocol error a client sees for it.
func (s *Server) internal(ctx context.Context, err error) error {
	s.logger.LogAttrs(ctx, slog.LevelError, "mcpx: internal error", slog.String("error", err.Error()))
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// listTools answers one page of the tools the caller id may see: the
// capabilities an HTTP listing shows id, with the same cursors (package
// listcursor). A caller whose scopes are its grants
// (auth.Identity.ScopeChallenge) sees only the tools its Authorizer
// reports as granted: a tool it needs is one to ask its user for, which
// a call of it does (see stepUp), not one to offer the model.
func (s *Server) listTools(ctx context.Context, id *auth.Identity, params *mcp.ListToolsParams) (*mcp.ListToolsResult, error) {
	after := ""
	if params != nil && params.Cursor != "" {
		var ok bool
		if after, ok = listcursor.Decode(params.Cursor); !ok {
			return nil, invalidParams("invalid cursor")
		}
	}
	res := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	var last string
	// The registry alone answers: a lazy executor is not built for a
	// listing.
	for _, d := range s.ordered {
		if (after != "" && d.Name() <= after) || !d.Visible(ctx, id, false) || !listsGranted(id, d.Name()) {
			continue
		}
		if len(res.Tools) == s.pageSize {
			res.NextCursor = listcursor.Encode(last)
			break
		}
		t := s.tools[d].mcp
		var meta mcp.Meta
		if id != nil && id.Authorizer != nil {
			if st := id.Authorizer.GrantStatus(d.Name()); st != "" {
				meta = mcp.Meta{MetaGrantStatus: st}
			}
		}
		if s.src.NeedsConfirmation(d) {
			if meta == nil {
				meta = mcp.Meta{}
			}
			meta[agentcap.MCPMetaRequiresConfirmation] = true
		}
		if meta != nil {
			c := *t
			c.Meta = meta
			t = &c
		}
		res.Tools = append(res.Tools, t)
		last = d.Name()
	}
	res.CacheScope = "private"
	return res, nil
}

// listsGranted reports whether a listing for id may show the capability
// name as far as grants go: always, unless id's scopes are its grants
// (auth.Identity.ScopeChallenge), when only a capability its Authorizer
// reports as granted is listed. Without an Authorizer such an identity
// may run everything it sees, so everything is granted.
func listsGranted(id *auth.Identity, name string) bool {
	if id == nil || !id.ScopeChallenge || id.Authorizer == nil {
		return true
	}
	return id.Authorizer.GrantStatus(name) == agentcap.GrantStatusGranted
}

// identityCtxKey carries a call's identity from the middleware to the
// tool handler the SDK runs.
type identityCtxKey struct{}

// checkCall refuses a malformed call. A capability the caller may not see
// is an unknown tool, refused before its arguments are looked at, so that
// neither its existence nor its schema leaks.
func (s *Server) checkCall(ctx context.Context, id *auth.Identity, req *mcp.CallToolRequest) error {
	params := req.Params
	if params == nil {
		return invalidParams("missing params")
	}
	if def, known := s.reg.Lookup(params.Name); known && !def.Visible(ctx, id, true) {
		return unknownTool(params.Name)
	}
	if !isObjectOrAbsent(params.Arguments) {
		return invalidParams("arguments must be a JSON object")
	}
	return nil
}

// handleTool is the SDK tool handler of every capability: it runs the
// call checked by the middleware, for the identity the middleware found.
func (s *Server) handleTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, ok := ctx.Value(identityCtxKey{}).(*auth.Identity)
	if !ok {
		return nil, s.internal(ctx, errors.New("mcpx: a tool call reached its handler without an identity"))
	}
	ctx, cancel := cancelWithRequest(ctx)
	defer cancel()
	return s.callTool(ctx, id, req)
}

// callTool runs a tool through the executor, on the raw arguments (one
// parse, strict, as httpx does), with the call's confirmation token. A
// call refused for want of a confirmation asks the user through the
// client (form elicitation) when the client can, once per call.
func (s *Server) callTool(ctx context.Context, id *auth.Identity, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	params := req.Params
	name := params.Name
	def, _ := s.reg.Lookup(name)
	answer, err := readConfirmation(params)
	if err != nil {
		return nil, err
	}
	if answer.answered && answer.action != "accept" {
		return s.declined(ctx, answer.action), nil
	}
	ctx = core.WithConfirmationToken(ctx, answer.token)
	if token := params.GetProgressToken(); token != nil && req.Session != nil {
		ctx = core.WithProgress(ctx, progressReporter(ctx, req.Session, token))
	}
	exec, err := s.executor(ctx)
	if err != nil {
		return s.unavailable(ctx, name, err), nil
	}
	data, err := exec.Execute(ctx, name, id, params.Arguments)
	if err != nil {
		ce := agentcap.As(err)
		if ce == nil {
			return nil, s.internal(ctx, fmt.Errorf("mcpx: the executor returned a foreign error: %w", err))
		}
		if ce.Code == agentcap.CodeCapabilityNotFound && ce.Stage == agentcap.StageLookup {
			return nil, unknownTool(name)
		}
		if ce.Code == agentcap.CodeConfirmationRequired && !answer.answered && elicitsForms(ctx, req) {
			if res := s.askConfirmation(s.tools[def], params.Arguments, ce); res != nil {
				return res, nil
			}
		}
		return s.refused(ctx, name, ce), nil
	}
	t := s.tools[def]
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(data)}},
		StructuredContent: mcpschema.Structured(data, t.wrapped),
	}, nil
}

// refused turns a failed or refused call into the tool result a client
// shows its model: isError, with the kit's error envelope ({"error":
// code, "message": ..., ...}) as text and under _meta MetaError. It is the
// one place where a call's failure becomes an answer, so an outcome that
// needs the user's decision belongs here too.
func (s *Server) refused(ctx context.Context, name string, ce *agentcap.Error) *mcp.CallToolResult {
	if ce.HTTPStatus() >= 500 && ce.Code != agentcap.CodeCancelled && ce.Unwrap() != nil {
		s.logger.LogAttrs(ctx, slog.LevelError, "mcpx: capability failed",
			slog.String("capability", name), slog.String("code", string(ce.Code)),
			slog.String("stage", string(ce.Stage)), slog.String("error", ce.Error()))
	}
	return s.errorResult(ctx, ce)
}

// errorResult renders e as an isError tool result.
func (s *Server) errorResult(ctx context.Context, e *agentcap.Error) *mcp.CallToolResult {
	body, err := agentcap.AppendError(nil, e, agentcap.KeyError)
	if err != nil {
		s.logger.LogAttrs(ctx, slog.LevelError, "mcpx: dropping error members that cannot be encoded",
			slog.String("code", string(e.Code)), slog.String("error", err.Error()))
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: string(body)}},
		IsError: true,
		Meta:    mcp.Meta{MetaError: json.RawMessage(body)},
	}
}

func unknownTool(name string) error { return invalidParams("unknown tool %q", name) }

// isObjectOrAbsent reports arguments that may go to the executor: absent,
// null or a JSON object. Anything else is not a tools/call the protocol
// knows, and is refused as malformed; the executor still checks the
// object strictly.
func isObjectOrAbsent(args json.RawMessage) bool {
	t := bytes.TrimSpace(args)
	return len(t) == 0 || string(t) == "null" || t[0] == '{'
}

// progressReporter forwards a capability's progress reports to the client
// as notifications/progress for the call's token. Reports are best
// effort: one that cannot be sent (the client is gone) is dropped.
func progressReporter(ctx context.Context, ss *mcp.ServerSession, token any) core.ProgressFunc {
	return func(p core.Progress) {
		_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token,
			Progress:      p.Progress,
			Total:         p.Total,
			Message:       p.Message,
		})
	}
}
