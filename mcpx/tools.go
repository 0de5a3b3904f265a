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

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/internal/listcursor"
	"github.com/agentcap/agentcap/internal/mcpschema"
)

// Method names the server answers itself.
const (
	methodInitialize = "initialize"
	methodListTools  = "tools/list"
	methodCallTool   = "tools/call"
)

// middleware answers tools/list and tools/call from the executor and
// passes every other method (initialize, ping, cancellation, ...) to the
// SDK, recording over HTTP the session an initialize opens (see
// sessionTable). The SDK's own tool table stays empty: which tools exist
// depends on who asks.
func (s *Server[C, P]) middleware(fixed *P) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case methodInitialize:
				if fixed == nil {
					if err := s.openSession(req); err != nil {
						return nil, err
					}
				}
			case methodListTools:
				r, ok := req.(*mcp.ListToolsRequest)
				if !ok {
					break
				}
				p, err := s.principal(req, fixed)
				if err != nil {
					return nil, s.internal(ctx, err)
				}
				return s.listTools(ctx, p, r.Params)
			case methodCallTool:
				r, ok := req.(*mcp.CallToolRequest)
				if !ok {
					break
				}
				p, err := s.principal(req, fixed)
				if err != nil {
					return nil, s.internal(ctx, err)
				}
				if e, ok := any(p).(executing[P]); ok {
					p = e.ForExecution()
				}
				if err := s.checkCall(ctx, p, r); err != nil {
					return nil, err
				}
				if _, known := s.reg.Lookup(r.Params.Name); !known {
					// The executor records the attempt and refuses it.
					return s.callTool(ctx, p, r)
				}
				// A known tool runs through the SDK's own tools/call,
				// where a result that asks the client for input (the
				// user's confirmation) is sent or fulfilled as the
				// client's protocol version wants.
				return next(context.WithValue(ctx, principalCtxKey{}, p), method, req)
			}
			return next(ctx, method, req)
		}
	}
}

// internal logs err and returns the protocol error a client sees for it.
func (s *Server[C, P]) internal(ctx context.Context, err error) error {
	s.logger.LogAttrs(ctx, slog.LevelError, "mcpx: internal error", slog.String("error", err.Error()))
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// listTools answers one page of the tools principal may see: the
// capabilities the executor shows principal in httpx's listing, with
// httpx's cursors (package listcursor).
func (s *Server[C, P]) listTools(ctx context.Context, principal P, params *mcp.ListToolsParams) (*mcp.ListToolsResult, error) {
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
		if (after != "" && d.Name() <= after) || !d.Visible(ctx, principal) {
			continue
		}
		if len(res.Tools) == s.pageSize {
			res.NextCursor = listcursor.Encode(last)
			break
		}
		t := s.tools[d].mcp
		var meta mcp.Meta
		if s.grantStatus != nil {
			if st := s.grantStatus(ctx, principal, d); st != "" {
				meta = mcp.Meta{MetaGrantStatus: st}
			}
		}
		if core.ConfirmationNeeded(s.src, d) {
			if meta == nil {
				meta = mcp.Meta{}
			}
			meta[MetaRequiresConfirmation] = true
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

// executing is implemented by principals that look different while they
// execute (agentauth.Caller): see agentauth.Caller.ForExecution.
type executing[P any] interface{ ForExecution() P }

// principalCtxKey carries a call's principal from the middleware to the
// tool handler the SDK runs.
type principalCtxKey struct{}

// checkCall refuses a malformed call. A capability the principal may not
// see is an unknown tool, refused before its arguments are looked at, so
// that neither its existence nor its schema leaks.
func (s *Server[C, P]) checkCall(ctx context.Context, principal P, req *mcp.CallToolRequest) error {
	params := req.Params
	if params == nil {
		return invalidParams("missing params")
	}
	if def, known := s.reg.Lookup(params.Name); known && !def.Visible(ctx, principal) {
		return unknownTool(params.Name)
	}
	if !isObjectOrAbsent(params.Arguments) {
		return invalidParams("arguments must be a JSON object")
	}
	return nil
}

// handleTool is the SDK tool handler of every capability: it runs the
// call checked by the middleware, for the principal the middleware found.
func (s *Server[C, P]) handleTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, ok := ctx.Value(principalCtxKey{}).(P)
	if !ok {
		return nil, s.internal(ctx, errors.New("mcpx: a tool call reached its handler without a principal"))
	}
	return s.callTool(ctx, p, req)
}

// callTool runs a tool through the executor, on the raw arguments (one
// parse, strict, as httpx does), with the call's confirmation token. A
// call refused for want of a confirmation asks the user through the
// client (form elicitation) when the client can, once per call.
func (s *Server[C, P]) callTool(ctx context.Context, principal P, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	params := req.Params
	name := params.Name
	def, _ := s.reg.Lookup(name)
	answer, err := readConfirmation(params)
	if err != nil {
		return nil, err
	}
	if answer.answered && answer.action != "accept" {
		return declined(answer.action), nil
	}
	ctx = core.WithConfirmationToken(ctx, answer.token)
	if token := params.GetProgressToken(); token != nil && req.Session != nil {
		ctx = core.WithProgress(ctx, progressReporter(ctx, req.Session, token))
	}
	exec, err := s.executor(ctx)
	if err != nil {
		return s.unavailable(ctx, name, err), nil
	}
	data, err := exec.ExecuteDynamic(ctx, name, principal, params.Arguments, s.authorizer(principal))
	if err != nil {
		var ce *core.Error
		if !errors.As(err, &ce) {
			return nil, s.internal(ctx, fmt.Errorf("mcpx: the executor returned a foreign error: %w", err))
		}
		if ce.Code == core.CodeUnknownCapability && ce.App() == nil {
			return nil, unknownTool(name)
		}
		if ce.Code == core.CodeConfirmationRequired && !answer.answered && elicitsForms(req) {
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
// shows its model: isError, with the httpx error envelope ({"error":
// code, "message": ..., ...}) as text and under _meta MetaError. It is the
// one place where a call's failure becomes an answer, so an outcome that
// needs the user's decision belongs here too.
func (s *Server[C, P]) refused(ctx context.Context, name string, ce *core.Error) *mcp.CallToolResult {
	ans := httpx.AnswerError(ce, s.logger)
	if ans.Internal && ce.Code != core.CodeCanceled {
		s.logger.LogAttrs(ctx, slog.LevelError, "mcpx: capability failed",
			slog.String("capability", name), slog.String("code", string(ce.Code)),
			slog.String("stage", string(ce.Stage)), slog.String("error", ce.Error()))
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: string(ans.Body)}},
		IsError: true,
		Meta:    mcp.Meta{MetaError: json.RawMessage(ans.Body)},
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

// authorizer binds the principal to Config.Authorize.
func (s *Server[C, P]) authorizer(principal P) core.AuthorizeFunc {
	if s.authorize == nil {
		return nil
	}
	return func(ctx context.Context, inv *core.Invocation) error {
		return s.authorize(ctx, principal, inv)
	}
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
