package mcpx

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap/auth"
)

// fastProtocols are the protocol versions whose plain tools/call mcpx
// answers itself (see directCall): those whose stateless answer to it is
// one event on the POST's response stream, with nothing asked of the
// client during the call.
var fastProtocols = map[string]bool{"2025-06-18": true, "2025-11-25": true}

// directCall answers, without the SDK, the commonest request an MCP host
// sends: one tools/call of a tool the caller may see, with its arguments
// and nothing else (no _meta, hence no progress token, no confirmation
// token, no client capabilities; no input responses), from a client on a
// protocol version of fastProtocols that accepts an event stream, outside
// any session. The SDK's stateless transport would build a session for
// the request, decode the message again and encode the same answer as
// one "message" event; directCall runs the same callTool and writes that
// event itself, byte for byte as the SDK does (TestDirectCallAnswersAsTheSDK
// holds both to the same bytes). Anything else, or any doubt, goes to the
// SDK: directCall returns false having written nothing.
func (s *Server) directCall(w http.ResponseWriter, r *http.Request, id *auth.Identity, call toolCall) bool {
	if s.noDirectCall || !call.plain || !fastProtocols[r.Header.Get("Mcp-Protocol-Version")] ||
		r.Header.Get("Mcp-Session-Id") != "" || r.Header.Get("Last-Event-ID") != "" ||
		!acceptsStream(r.Header.Values("Accept")) || !isJSON(r.Header.Get("Content-Type")) {
		return false
	}
	// The SDK's bearer middleware answers a request without a Bearer
	// token 401 whatever the verifier said.
	if token, ok := auth.BearerToken(r.Header.Get("Authorization")); !ok || token == "" {
		return false
	}
	rpcID, name, args := call.id, call.name, call.args
	def, known := s.reg.Lookup(name)
	if !known || s.tools[def] == nil || !def.Visible(r.Context(), id, true) {
		return false
	}
	// The request's own context tells callTool it is served over HTTP,
	// and ends the call when the client goes.
	ctx := context.WithValue(r.Context(), requestCtxKey{}, r.Context())
	res, err := s.callTool(ctx, id, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name, Arguments: args}})
	msg := &jsonrpc.Response{ID: rpcID}
	if err != nil {
		var wire *jsonrpc.Error
		if !errors.As(err, &wire) {
			wire = s.internal(ctx, err).(*jsonrpc.Error)
		}
		msg.Error = wire
	} else if msg.Result, err = json.Marshal(res); err != nil {
		msg.Result, msg.Error = nil, s.internal(ctx, err).(*jsonrpc.Error)
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		s.writeError(w, r, s.internal(ctx, err), nil)
		return true
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	buf := make([]byte, 0, len(data)+32)
	buf = append(buf, "event: message\ndata: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	_, _ = w.Write(buf)
	return true
}

// acceptsStream reports Accept values that name both application/json
// and text/event-stream, as a Streamable HTTP POST must.
func acceptsStream(values []string) bool {
	var jsonOK, streamOK bool
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			switch mt {
			case "application/json":
				jsonOK = true
			case "text/event-stream":
				streamOK = true
			}
		}
	}
	return jsonOK && streamOK
}

// isJSON reports a Content-Type of application/json.
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}
