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

	"github.com/agentcap/agentcap/client"
)

// A capability tool whose call needs the user's confirmation asks for it
// through the MCP host: the call's result is an input request (an
// elicitation form) that the host answers by asking its user, and the
// host then calls the tool again with the answer and the request state,
// an id naming what the bridge kept of the first call. The host's answer
// is the user's: the bridge confirms nothing else, and a host that cannot
// ask gets the refusal as the tool's error.

// errDeclined is the error of a tool call whose confirmation the user
// declined or dismissed.
var errDeclined = errors.New("the user did not confirm the call: nothing was done")

// errNoState is the error of a retried call whose request state the
// bridge does not know (any more).
var errNoState = errors.New("this confirmation is unknown, used or expired: call the tool again")

// confirmInput names the input request that asks for a confirmation.
const confirmInput = "confirm"

// confirmSchema is the form that asks the user to confirm a call.
var confirmSchema = json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean","title":"Confirm this call",` +
	`"description":"The call runs only if you confirm it."}},"required":["confirm"]}`)

// noticeSchema is a form without fields: a message to acknowledge.
var noticeSchema = json.RawMessage(`{"type":"object","properties":{}}`)

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

// canElicit reports whether the MCP host can ask its user a form
// question (elicitation).
func canElicit(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	// A host that names neither mode supports forms (the first version
	// of elicitation).
	return e.Form != nil || e.URL == nil
}

// askToConfirm turns the failure of a call that needs the user's
// confirmation into the input request that asks for it, keeping the
// call's state; it returns nil for any other outcome. A host that cannot
// ask gets err back, saying so.
func (b *bridge) askToConfirm(ss *mcp.ServerSession, e client.SetEntry, args any, err error) (*mcp.CallToolResult, error) {
	var cr *client.ConfirmationRequired
	var cp *client.ConfirmationPending
	st := &confirmState{tool: e.Name, args: args}
	var ask *mcp.ElicitParams
	switch {
	case errors.As(err, &cr):
		st.token, st.expires = cr.Confirmation.Token, cr.Confirmation.ExpiresAt
		ask = &mcp.ElicitParams{Message: previewMessage(e.Name, cr), RequestedSchema: confirmSchema}
	case errors.As(err, &cp):
		st.pending = cp
		if cp.Approval.ExpiresIn > 0 {
			st.expires = time.Now().Add(time.Duration(cp.Approval.ExpiresIn) * time.Second)
		}
		ask = &mcp.ElicitParams{Message: confirmationMessage(e.Name, cp.Approval), RequestedSchema: noticeSchema}
	default:
		return nil, err
	}
	if !canElicit(ss) {
		if cp != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s needs the user's confirmation and this MCP host cannot ask for it; nothing was done: %w", e.Name, err)
	}
	if st.expires.IsZero() {
		st.expires = time.Now().Add(confirmStateTTL)
	}
	id := b.keepConfirmState(st)
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{confirmInput: ask}, RequestState: id}, nil
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
	answer, _ := req.Params.InputResponses[confirmInput].(*mcp.ElicitResult)
	if answer == nil || answer.Action != "accept" {
		return nil, errDeclined
	}
	token := st.token
	if st.pending != nil {
		c, err := e.Agent().AwaitConfirmation(ctx, st.pending, nil)
		if err != nil {
			return nil, err
		}
		token = c.Token
	} else if answer.Content[confirmInput] != true {
		return nil, errDeclined
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
	fmt.Fprintf(&b, "%s needs your confirmation before it runs.", tool)
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
		" to confirm or refuse it there, then accept this to go on; dismiss it to give the call up."
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
