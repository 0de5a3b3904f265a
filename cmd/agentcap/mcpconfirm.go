package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	wire "github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/client"
)

// A capability tool whose call needs the user's confirmation asks for it
// through the MCP host, as mcpx does for its own tools: the call's result
// is an input request (a form elicitation, id
// agentcap.MCPElicitationID, showing the call and its preview, or where a
// person confirms it) that the host answers by asking its user, and the
// host then calls the tool again with the answer and the request state,
// an id naming what the bridge kept of the first call. Accepting confirms; declining or dismissing is a
// confirmation_declined error result. The token never leaves the bridge,
// and a host that cannot ask gets the refusal as the tool's error: no
// call is confirmed without the user.

// declinedError is the error of a tool call whose confirmation the user
// declined ("decline") or dismissed ("cancel").
type declinedError struct{ action string }

func (e declinedError) Error() string {
	if e.action == "decline" {
		return "the user declined to confirm this call: nothing was done"
	}
	return "the user did not confirm this call: nothing was done"
}

// errNoState is the error of a retried call whose request state the
// bridge does not know (any more).
var errNoState = errors.New("this confirmation is unknown, used or expired: call the tool again")

// confirmSchema is the form of a confirmation request: the user answers
// accept, decline or cancel, and fills in nothing.
var confirmSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// maxConfirmStates bounds the confirmations the bridge keeps waiting for
// the host's answer.
const maxConfirmStates = 64

// confirmStateTTL bounds how long the bridge waits for the host's answer
// when the confirmation names no expiry of its own.
const confirmStateTTL = 10 * time.Minute

// confirmState is what the bridge keeps of a call waiting for the user's
// answer: the tool, its arguments and either the token that confirms it
// or the person's pending confirmation.
type confirmState struct {
	tool    string
	args    any
	token   string
	pending *client.ConfirmationPending
	expires time.Time
}

// canElicit reports whether the MCP host that sent req can ask its user a
// form question (elicitation): the capabilities of the request's own
// _meta, else those of the session's initialize. A host declaring
// elicitation without naming a mode takes forms.
func canElicit(req *mcp.CallToolRequest) bool {
	var caps *mcp.ClientCapabilities
	if v, ok := req.Params.Meta[mcp.MetaKeyClientCapabilities]; ok {
		if b, err := json.Marshal(v); err == nil {
			var c mcp.ClientCapabilities
			if json.Unmarshal(b, &c) == nil {
				caps = &c
			}
		}
	} else if req.Session != nil {
		if ip := req.Session.InitializeParams(); ip != nil {
			caps = ip.Capabilities
		}
	}
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

// askToConfirm turns the failure of a call that needs the user's
// confirmation into the input request that asks for it, keeping the
// call's state; it returns nil for any other outcome. A host that cannot
// ask gets err back, saying so.
func (b *bridge) askToConfirm(req *mcp.CallToolRequest, e client.SetEntry, args any, err error) (*mcp.CallToolResult, error) {
	var cr *client.ConfirmationRequired
	var cp *client.ConfirmationPending
	st := &confirmState{tool: e.Name, args: args}
	var ask *mcp.ElicitParams
	meta := mcp.Meta{"agentcap/capability": e.Capability.Name, "agentcap/arguments": args}
	switch {
	case errors.As(err, &cr):
		st.token, st.expires = cr.Confirmation.Token, cr.Confirmation.ExpiresAt
		if cr.Preview != nil {
			meta["agentcap/preview"] = cr.Preview
		}
		ask = &mcp.ElicitParams{Meta: meta, Mode: "form", Message: previewMessage(e.Name, cr), RequestedSchema: confirmSchema}
	case errors.As(err, &cp):
		st.pending = cp
		if cp.Approval.ExpiresIn > 0 {
			st.expires = time.Now().Add(time.Duration(cp.Approval.ExpiresIn) * time.Second)
		}
		ask = &mcp.ElicitParams{Meta: meta, Mode: "form", Message: confirmationMessage(e.Name, cp.Approval), RequestedSchema: confirmSchema}
	default:
		return nil, err
	}
	if !canElicit(req) {
		if cp != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s needs the user's confirmation and this MCP host cannot ask for it; nothing was done: %w", e.Name, err)
	}
	if st.expires.IsZero() {
		st.expires = time.Now().Add(confirmStateTTL)
	}
	id := b.keepConfirmState(st)
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{wire.MCPElicitationID: ask}, RequestState: id}, nil
}

// keepConfirmState stores st under a fresh random id, dropping expired
// states and, past maxConfirmStates, the one that expires first.
func (b *bridge) keepConfirmState(st *confirmState) string {
	id := rand.Text()
	b.confirmMu.Lock()
	defer b.confirmMu.Unlock()
	if b.confirmStates == nil {
		b.confirmStates = map[string]*confirmState{}
	}
	now := time.Now()
	first := ""
	for k, s := range b.confirmStates {
		if !now.Before(s.expires) {
			delete(b.confirmStates, k)
			continue
		}
		if first == "" || s.expires.Before(b.confirmStates[first].expires) {
			first = k
		}
	}
	if len(b.confirmStates) >= maxConfirmStates {
		delete(b.confirmStates, first)
	}
	b.confirmStates[id] = st
	return id
}

// takeConfirmState removes and returns the state of id, or nil when it is
// unknown or expired.
func (b *bridge) takeConfirmState(id string) *confirmState {
	b.confirmMu.Lock()
	defer b.confirmMu.Unlock()
	st := b.confirmStates[id]
	delete(b.confirmStates, id)
	if st == nil || !time.Now().Before(st.expires) {
		return nil
	}
	return st
}

// resumeConfirmed continues a call the host retried with the user's
// answer: a confirmed call runs with its token, or, for a person's
// confirmation, once the decision gave one.
func (b *bridge) resumeConfirmed(ctx context.Context, req *mcp.CallToolRequest, set *client.Set, e client.SetEntry, args any) (*client.Result, error) {
	st := b.takeConfirmState(req.Params.RequestState)
	if st == nil || st.tool != e.Name || !sameJSON(st.args, args) {
		return nil, errNoState
	}
	answer, _ := req.Params.InputResponses[wire.MCPElicitationID].(*mcp.ElicitResult)
	if answer == nil {
		return nil, declinedError{}
	}
	if answer.Action != "accept" {
		return nil, declinedError{answer.Action}
	}
	token := st.token
	if st.pending != nil {
		c, err := e.Agent().AwaitConfirmation(ctx, st.pending, nil)
		if err != nil {
			return nil, err
		}
		token = c.Token
	}
	return set.Call(ctx, e.Name, args, client.WithConfirmationToken(token))
}

// sameJSON reports whether two tool arguments are the same JSON value.
func sameJSON(a, b any) bool {
	decode := func(v any) (any, bool) {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, false
		}
		var out any
		return out, json.Unmarshal(raw, &out) == nil
	}
	x, ok1 := decode(a)
	y, ok2 := decode(b)
	return ok1 && ok2 && reflect.DeepEqual(x, y)
}

// previewMessage asks the user to confirm a call, showing its preview.
func previewMessage(tool string, cr *client.ConfirmationRequired) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s needs your confirmation before it runs. Accept to confirm it.", tool)
	if cr.Preview != nil {
		var pretty any
		shown := []byte(cr.Preview)
		if json.Unmarshal(cr.Preview, &pretty) == nil {
			shown, _ = json.MarshalIndent(pretty, "", "  ")
		}
		fmt.Fprintf(&b, "\n\nWhat it would do:\n%s", shown)
	}
	return b.String()
}

// confirmationMessage tells the user where to confirm a call.
func confirmationMessage(tool string, ap client.Approval) string {
	return tool + " waits for your confirmation. Open " + whereToConfirm(ap) +
		" to confirm or refuse it there, then accept this to go on; decline it to give the call up."
}

// pendingMessage tells the model that a call waits for a person's
// confirmation the bridge could not ask for.
func pendingMessage(p *client.ConfirmationPending) string {
	return p.Capability + " needs the user's confirmation, and this MCP host cannot ask for it: ask the user to open " +
		whereToConfirm(p.Approval) + ". The call was not run."
}

// whereToConfirm says where an approval is given: "URL and enter the
// code CODE", to follow "open".
func whereToConfirm(ap client.Approval) string {
	u := ap.VerificationURIComplete
	if u == "" {
		u = ap.VerificationURI
	}
	msg := u
	if ap.UserCode != "" {
		msg += " and enter the code " + ap.UserCode
	}
	return msg
}
