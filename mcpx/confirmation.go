package mcpx

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap"
)

// MetaConfirmationToken is the _meta key of a tools/call request that
// carries a confirmation token: the token of an earlier
// confirmation_required result, for a call with the same arguments (see
// the package documentation, "Confirmations"). The key that marks a tool
// whose calls must be confirmed and the id of the confirmation request are
// agentcap.MCPMetaRequiresConfirmation and agentcap.MCPElicitationID,
// which the agentcap command's MCP bridge shares.
const MetaConfirmationToken = "agentcap/confirmation_token"

// Members of the _meta of a confirmation request, for clients that show
// more than its message.
const (
	metaCapability = "agentcap/capability"
	metaArguments  = "agentcap/arguments"
	metaPreview    = "agentcap/preview"
)

// confirmationSchema is the requested schema of a confirmation request:
// the user answers with accept, decline or cancel, and fills in nothing.
var confirmationSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// confirmationAnswer is what a tools/call carries about its confirmation:
// a token, and whether it answers the server's confirmation request
// (then action is the user's choice).
type confirmationAnswer struct {
	token    string
	answered bool
	action   string
}

// readConfirmation reads the confirmation of a call: the answer to the
// server's confirmation request, whose token the request state holds, or
// else a token under _meta MetaConfirmationToken.
func readConfirmation(params *mcp.CallToolParamsRaw) (confirmationAnswer, error) {
	if resp, ok := params.InputResponses[agentcap.MCPElicitationID]; ok {
		a := confirmationAnswer{answered: true}
		if r, ok := resp.(*mcp.ElicitResult); ok && r != nil {
			a.action = r.Action
		}
		if a.action == "accept" {
			a.token = params.RequestState
		}
		return a, nil
	}
	v, ok := params.Meta[MetaConfirmationToken]
	if !ok {
		return confirmationAnswer{}, nil
	}
	token, ok := v.(string)
	if !ok {
		return confirmationAnswer{}, invalidParams("_meta %q must be a string", MetaConfirmationToken)
	}
	return confirmationAnswer{token: token}, nil
}

// elicitsForms reports whether the user of the client that sent req can
// be asked to confirm: the client takes form elicitations, by the
// capabilities of the request's own _meta (protocol versions without a
// session handshake), else those of its session's initialize, and the
// question can reach it. A client declaring elicitation without naming a
// mode takes forms. Over stateless HTTP only a 2026-07-28 client can be
// asked, in the tool result: an older one would need elicitation/create
// sent during the call, which no stateless server can send, so it gets
// the preview and a token instead.
func elicitsForms(ctx context.Context, req *mcp.CallToolRequest) bool {
	var caps *mcp.ClientCapabilities
	var version string
	if req.Session != nil {
		if ip := req.Session.InitializeParams(); ip != nil {
			caps, version = ip.Capabilities, ip.ProtocolVersion
		}
	}
	if _, overHTTP := ctx.Value(requestCtxKey{}).(context.Context); overHTTP && version < protocolInputRequests {
		return false
	}
	if v, ok := req.Params.Meta[mcp.MetaKeyClientCapabilities]; ok {
		caps = nil
		b, err := json.Marshal(v)
		if err == nil {
			var c mcp.ClientCapabilities
			if json.Unmarshal(b, &c) == nil {
				caps = &c
			}
		}
	}
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

// protocolInputRequests is the first protocol version whose tool results
// may ask the client for input (and which has no sessions).
const protocolInputRequests = "2026-07-28"

// askConfirmation turns a confirmation_required refusal into a request
// for the user's confirmation: the tool result asks the client for one
// form elicitation showing the call and its preview, and keeps the
// refusal's fresh token as the request state, to be consumed when the
// call comes back accepted.
func (s *Server) askConfirmation(t *tool, args json.RawMessage, ce *agentcap.Error) *mcp.CallToolResult {
	fields := ce.Fields
	conf, _ := fields["confirmation"].(map[string]string)
	token := conf["token"]
	if token == "" {
		return nil
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "Confirm %s: %s\nArguments: %s", t.mcp.Title, t.def.Description(), args)
	meta := mcp.Meta{metaCapability: t.def.Name(), metaArguments: args}
	if p, ok := fields["preview"].(json.RawMessage); ok {
		fmt.Fprintf(&msg, "\nPreview: %s", p)
		meta[metaPreview] = p
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{agentcap.MCPElicitationID: &mcp.ElicitParams{
			Meta:            meta,
			Mode:            "form",
			Message:         msg.String(),
			RequestedSchema: confirmationSchema,
		}},
		RequestState: token,
	}
}

// declined is the error result of a call whose user did not accept the
// confirmation request: action is "decline", "cancel" or what else the
// client answered.
func (s *Server) declined(ctx context.Context, action string) *mcp.CallToolResult {
	msg := "the user declined to confirm this call"
	if action != "decline" {
		msg = "the user did not confirm this call"
	}
	return s.errorResult(ctx, agentcap.NewError(agentcap.CodeConfirmationDeclined, msg).With("action", action))
}
