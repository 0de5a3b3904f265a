package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/core"
)

// Paths of the user API, relative to the issuer. See UserAPI.
const (
	PathUserSession   = "/user/session"
	PathUserAgents    = "/user/agents"
	PathUserHosts     = "/user/hosts"
	PathUserApprovals = "/user/approvals"
)

// pathUserPasskeys is where the user API keeps the user's passkeys.
const pathUserPasskeys = "/user/passkeys"

// CSRFHeader carries the user API's CSRF token on every request that
// changes something.
const CSRFHeader = "X-CSRF-Token"

// userTokenLife is how long a user API CSRF token is accepted.
const userTokenLife = time.Hour

// UserAPI returns the signed-in user's JSON API: what an application's
// own UI needs to show a user the agents acting for them and to act on
// them, the session-authenticated counterpart of the protocol's
// host-authenticated endpoints. Paths are relative to the issuer; the
// Handler mounts it under {issuer}/user/ when Config.SignedInUser is set.
//
//	GET    /user/session                       the user, and the CSRF token
//	GET    /user/agents                        their agents (?status=, ?host_id=, ?mode=)
//	GET    /user/agents/{agent_id}             one agent with its grants
//	PATCH  /user/agents/{agent_id}             {"name"}
//	POST   /user/agents/{agent_id}/revoke      revoke the agent
//	POST   /user/agents/{agent_id}/grants      {"capabilities": [name | {name, constraints}]}
//	DELETE /user/agents/{agent_id}/grants/{capability}   revoke one grant
//	GET    /user/hosts                         hosts linked to them
//	GET    /user/hosts/{host_id}
//	PATCH  /user/hosts/{host_id}               {"name", "default_capabilities"}
//	POST   /user/hosts/{host_id}/revoke        revoke the host and its agents
//	GET    /user/approvals                     requests waiting for them (CIBA, their agents', calls to confirm)
//	GET    /user/approvals/{approval_id}
//	POST   /user/approvals/{approval_id}       {"decision": "approve"|"deny", "capabilities", "constraints", "reason", "presence"}
//	GET    /user/activity                      their audit records, newest first (?agent_id=, ?capability=, ?event=, ?cursor=, ?limit=),
//	                                           served when there is an activity store (Config.Activity)
//	POST   /user/approvals/{approval_id}/presence     {"capabilities", "constraints"}: a presence request for that decision
//	POST   /user/agents/{agent_id}/grants/presence    {"capabilities"}: a presence request for that grant
//	GET    /user/passkeys                      their passkeys, and whether passkeys work here
//	POST   /user/passkeys/options              begin adding a passkey
//	POST   /user/passkeys                      {"token", "name", "credential", "presence"} add it
//	PATCH  /user/passkeys/{passkey_id}         {"name"}
//	DELETE /user/passkeys/{passkey_id}
//
// A request lists, for each capability, the missing_constraints an
// approval must set: the fields the capability requires a grant to
// constrain that the agent's proposal leaves out. An approval sets them
// in "constraints", by capability and field ({"transfer_money":
// {"destination_account": "acc_456"}}), which narrow the proposal; one
// that leaves a required field unconstrained is 400 invalid_request
// naming the field, and changes nothing.
//
// Every request is authenticated by Config.SignedInUser (401
// authentication_required without a user); another user's agent, host or
// request is 404, as if it did not exist. Granting and deciding need a
// sign-in newer than Config.FreshAuth (403 reauthentication_required,
// protocol §8.11), and capabilities of approval strength webauthn need
// the presence step: "presence": {"token", "credential"}, a passkey's
// answer to the presence request made for exactly that decision or grant
// (docs/presence.md); or Config.PresenceCheck passing on the request;
// or, only under Config.DevPresenceCode, the request's code as
// presence_code.
//
// Requests that change something are refused unless they are safe from
// cross-site forgery: the browser's Sec-Fetch-Site and Origin, when
// sent, must name this origin; the X-CSRF-Token header must carry the
// token GET /user/session returned to this user within the hour (a
// custom header, which no cross-site form can send and which makes any
// cross-origin script request preflighted, and the provider answers no
// preflight); and a body must be application/json. Failures are 403
// csrf_failed. Answers are never cached. The requests count against
// RateLimits.UserAPIPerUser.
//
// UserAPI panics if Config.SignedInUser is nil.
func (p *Provider) UserAPI() http.Handler {
	if p.signedInUser == nil {
		panic("provider: UserAPI needs Config.SignedInUser")
	}
	mux := http.NewServeMux()
	b := p.basePath
	type route struct {
		pattern string
		unsafe  bool
		fresh   bool
		serve   func(w http.ResponseWriter, r *http.Request, u *User) error
	}
	for _, rt := range []route{
		{"GET " + b + PathUserSession, false, false, p.apiSession},
		{"GET " + b + PathUserAgents, false, false, p.apiAgents},
		{"GET " + b + PathUserAgents + "/{agent_id}", false, false, p.apiAgent},
		{"PATCH " + b + PathUserAgents + "/{agent_id}", true, false, p.apiRenameAgent},
		{"POST " + b + PathUserAgents + "/{agent_id}/revoke", true, false, p.apiRevokeAgent},
		{"POST " + b + PathUserAgents + "/{agent_id}/grants", true, true, p.apiGrant},
		{"DELETE " + b + PathUserAgents + "/{agent_id}/grants/{capability}", true, false, p.apiRevokeGrant},
		{"GET " + b + PathUserHosts, false, false, p.apiHosts},
		{"GET " + b + PathUserHosts + "/{host_id}", false, false, p.apiHost},
		{"PATCH " + b + PathUserHosts + "/{host_id}", true, false, p.apiUpdateHost},
		{"POST " + b + PathUserHosts + "/{host_id}/revoke", true, false, p.apiRevokeHost},
		{"GET " + b + PathUserApprovals, false, false, p.apiApprovals},
		{"GET " + b + PathUserApprovals + "/{approval_id}", false, false, p.apiApproval},
		{"POST " + b + PathUserApprovals + "/{approval_id}", true, true, p.apiDecide},
		{"POST " + b + PathUserApprovals + "/{approval_id}/presence", true, true, p.apiDecisionPresence},
		{"POST " + b + PathUserAgents + "/{agent_id}/grants/presence", true, true, p.apiGrantPresence},
		{"GET " + b + pathUserPasskeys, false, false, p.apiPasskeys},
		{"POST " + b + pathUserPasskeys + "/options", true, true, p.apiPasskeyOptions},
		{"POST " + b + pathUserPasskeys, true, true, p.apiAddPasskey},
		{"PATCH " + b + pathUserPasskeys + "/{passkey_id}", true, false, p.apiRenamePasskey},
		{"DELETE " + b + pathUserPasskeys + "/{passkey_id}", true, false, p.apiRemovePasskey},
	} {
		mux.Handle(rt.pattern, p.userHandler(rt.unsafe, rt.fresh, rt.serve))
	}
	if p.activity != nil {
		mux.Handle("GET "+b+PathUserActivity, p.userHandler(false, false, p.apiActivity))
	}
	mux.HandleFunc(b+"/user/", func(w http.ResponseWriter, r *http.Request) {
		p.writeErrorWith(w, r, agentcap.NewError(agentcap.CodeNotFound, "no such endpoint"), "")
	})
	return mux
}

// userHandler authenticates the user and applies the checks UserAPI
// documents before serve runs.
func (p *Provider) userHandler(unsafe, fresh bool, serve func(http.ResponseWriter, *http.Request, *User) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = p.withRequestInfo(w, r)
		fail := func(err error) { p.writeErrorWith(w, r, err, "") }
		u, err := p.signedInUser(r)
		if err != nil {
			fail(internalError(fmt.Errorf("signed-in user: %w", err)))
			return
		}
		if u == nil || u.ID == "" {
			fail(agentcap.NewError(agentcap.CodeAuthenticationRequired, "sign in first"))
			return
		}
		if err := p.limits.user(r.Context(), u.ID); err != nil {
			fail(err)
			return
		}
		if unsafe {
			switch {
			case !sameOriginAs(r, p.origin):
				fail(agentcap.NewError(agentcap.CodeCSRFFailed, "the request came from another site"))
				return
			case !p.checkCSRFAge(r.Header.Get(CSRFHeader), u.ID, "user-api", "api", userTokenLife):
				fail(agentcap.NewError(agentcap.CodeCSRFFailed, "the "+CSRFHeader+" header is missing or stale; get a token from "+PathUserSession))
				return
			case r.ContentLength != 0 && !isJSON(r.Header.Get("Content-Type")):
				fail(agentcap.NewError(agentcap.CodeUnsupportedMediaType, "the body must be application/json"))
				return
			}
		}
		if fresh && !p.freshUser(u) {
			fail(agentcap.NewError(agentcap.CodeReauthenticationRequired, "sign in again: this needs a recent sign-in"))
			return
		}
		if err := serve(w, r, u); err != nil {
			fail(userError(err))
		}
	})
}

func isJSON(ct string) bool {
	ct, _, _ = strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(ct), "application/json")
}

// freshUser reports a sign-in within Config.FreshAuth (protocol §8.11).
func (p *Provider) freshUser(u *User) bool {
	return u != nil && u.ID != "" && p.now().Sub(u.AuthenticatedAt) <= p.freshAuth
}

// userError maps the errors of the user's operations to answers.
func userError(err error) error {
	var ae *agentcap.Error
	var se *AgentStateError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, ErrNoSuchAgent):
		return agentcap.NewError(agentcap.CodeAgentNotFound, "no such agent")
	case errors.Is(err, ErrNoSuchHost):
		return agentcap.NewError(agentcap.CodeHostNotFound, "no such host")
	case errors.Is(err, ErrNoSuchGrant):
		return agentcap.NewError(agentcap.CodeGrantNotFound, "the agent holds no active grant of this capability")
	case errors.Is(err, ErrApprovalNotFound), errors.Is(err, ErrWrongUser):
		return agentcap.NewError(agentcap.CodeApprovalNotFound, "no such request")
	case errors.Is(err, ErrApprovalClosed):
		return agentcap.NewError(agentcap.CodeApprovalClosed, "the request was decided or has expired")
	case errors.Is(err, ErrPresenceRequired):
		return agentcap.NewError(agentcap.CodePresenceRequired, "a capability needs proof that you are present")
	case errors.Is(err, ErrInvalidDecision):
		msg, _ := strings.CutPrefix(err.Error(), ErrInvalidDecision.Error()+": ")
		return badRequest(msg)
	case errors.As(err, &se):
		return agentcap.NewError(agentcap.CodeConflict, "not possible now: the "+strings.TrimPrefix(se.Error(), "provider: the "))
	case errors.Is(err, store.ErrInvalid):
		return badRequest("the value cannot be stored")
	}
	return internalError(err)
}

func (p *Provider) apiSession(w http.ResponseWriter, _ *http.Request, u *User) error {
	writeJSON(w, http.StatusOK, map[string]any{
		"user_id": u.ID, "name": u.Name, "authenticated_at": u.AuthenticatedAt.UTC(), "fresh": p.freshUser(u),
		"csrf_token": p.csrfToken(u.ID, "user-api", "api"), "csrf_header": CSRFHeader,
	})
	return nil
}

func (p *Provider) apiAgents(w http.ResponseWriter, r *http.Request, u *User) error {
	agents, err := p.UserAgents(r.Context(), u.ID)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	out := agents[:0]
	for _, a := range agents {
		if (q.Get("status") == "" || a.Status == q.Get("status")) && (q.Get("host_id") == "" || a.HostID == q.Get("host_id")) &&
			(q.Get("mode") == "" || a.Mode == q.Get("mode")) {
			out = append(out, a)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": out})
	return nil
}

func (p *Provider) apiAgent(w http.ResponseWriter, r *http.Request, u *User) error {
	a, err := p.UserAgent(r.Context(), u.ID, r.PathValue("agent_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// writeAgent answers the agent's current state after a change.
func (p *Provider) writeAgent(w http.ResponseWriter, ctx context.Context, userID, agentID string) error {
	a, err := p.UserAgent(ctx, userID, agentID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

func (p *Provider) apiRenameAgent(w http.ResponseWriter, r *http.Request, u *User) error {
	m, err := readObject(r)
	if err != nil {
		return err
	}
	name, err := reqString(m, "name")
	if err != nil {
		return err
	}
	id := r.PathValue("agent_id")
	if err := p.RenameAgent(r.Context(), u.ID, id, name); err != nil {
		return err
	}
	return p.writeAgent(w, r.Context(), u.ID, id)
}

func (p *Provider) apiRevokeAgent(w http.ResponseWriter, r *http.Request, u *User) error {
	id := r.PathValue("agent_id")
	if err := p.RevokeAgent(r.Context(), u.ID, id); err != nil {
		return err
	}
	return p.writeAgent(w, r.Context(), u.ID, id)
}

func (p *Provider) apiGrant(w http.ResponseWriter, r *http.Request, u *User) error {
	m, err := readObject(r)
	if err != nil {
		return err
	}
	reqs, err := p.parseRequested(m["capabilities"], true)
	if err != nil {
		return err
	}
	id := r.PathValue("agent_id")
	grants := grantRequests(reqs)
	strong := false
	for _, rc := range reqs {
		if def, _ := p.reg.Lookup(rc.Name); def.Approval() == core.ApprovalWebAuthn {
			strong = true
		}
	}
	confirmed := false
	if strong {
		token, cred, answered, err := presenceAnswer(m)
		if err != nil {
			return err
		}
		switch {
		case p.presence != nil:
			a, err := p.UserAgent(r.Context(), u.ID, id)
			if err != nil {
				return err
			}
			ap := &Approval{Kind: "grant", AgentID: a.ID, AgentName: a.Name, Mode: a.Mode, HostID: a.HostID, HostName: a.HostName}
			for _, rc := range reqs {
				ap.Capabilities = append(ap.Capabilities, RequestedCapability{Name: rc.Name, Constraints: rc.Constraints})
			}
			confirmed = p.presence(r, u, ap) == nil
		case answered:
			if err := p.verifyPresence(r.Context(), u, grantBinding(id, grants), token, cred); err != nil {
				return presenceError(err)
			}
			confirmed = true
		}
	}
	if err := p.GrantCapabilities(r.Context(), u.ID, id, grants, confirmed); err != nil {
		return err
	}
	return p.writeAgent(w, r.Context(), u.ID, id)
}

func (p *Provider) apiRevokeGrant(w http.ResponseWriter, r *http.Request, u *User) error {
	id := r.PathValue("agent_id")
	if err := p.RevokeGrant(r.Context(), u.ID, id, r.PathValue("capability")); err != nil {
		return err
	}
	return p.writeAgent(w, r.Context(), u.ID, id)
}

func (p *Provider) apiHosts(w http.ResponseWriter, r *http.Request, u *User) error {
	hosts, err := p.UserHosts(r.Context(), u.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"hosts": hosts})
	return nil
}

func (p *Provider) apiHost(w http.ResponseWriter, r *http.Request, u *User) error {
	h, err := p.UserHost(r.Context(), u.ID, r.PathValue("host_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, h)
	return nil
}

func (p *Provider) apiUpdateHost(w http.ResponseWriter, r *http.Request, u *User) error {
	m, err := readObject(r)
	if err != nil {
		return err
	}
	var upd HostUpdate
	if raw, ok := m["name"]; ok {
		var name string
		if json.Unmarshal(raw, &name) != nil {
			return badRequest("name must be a string")
		}
		upd.Name = &name
	}
	if raw, ok := m["default_capabilities"]; ok {
		var caps []string
		if json.Unmarshal(raw, &caps) != nil || caps == nil {
			return badRequest("default_capabilities must be an array of capability names")
		}
		upd.DefaultCapabilities = &caps
	}
	id := r.PathValue("host_id")
	if err := p.UpdateHost(r.Context(), u.ID, id, upd); err != nil {
		return err
	}
	return p.apiHost(w, r, u)
}

func (p *Provider) apiRevokeHost(w http.ResponseWriter, r *http.Request, u *User) error {
	id := r.PathValue("host_id")
	n, err := p.RevokeHost(r.Context(), u.ID, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"host_id": id, "status": agentcap.StatusRevoked, "agents_revoked": n})
	return nil
}

// userApprovalJSON is a pending request as the user API shows it.
type userApprovalJSON struct {
	ID             string                `json:"approval_id"`
	Method         string                `json:"method"`
	Kind           string                `json:"kind"`
	AgentID        string                `json:"agent_id"`
	AgentName      string                `json:"agent_name"`
	Mode           string                `json:"mode"`
	HostID         string                `json:"host_id"`
	HostName       string                `json:"host_name"`
	NewHost        bool                  `json:"new_host"`
	Reason         string                `json:"reason,omitempty"`
	BindingMessage string                `json:"binding_message,omitempty"`
	Capabilities   []userApprovalCapJSON `json:"capabilities"`
	// Preview is the preview of the call to confirm, for kind
	// "confirmation".
	Preview   json.RawMessage `json:"preview,omitempty"`
	ExpiresAt time.Time       `json:"expires_at"`
	ExpiresIn int             `json:"expires_in"`
}

type userApprovalCapJSON struct {
	Name        string                     `json:"name"`
	Description string                     `json:"description,omitempty"`
	Approval    core.Approval              `json:"approval_strength,omitempty"`
	Risk        core.Risk                  `json:"risk,omitempty"`
	Constraints map[string]json.RawMessage `json:"constraints,omitempty"`
	// MissingConstraints are the fields the decision must constrain to
	// allow the capability.
	MissingConstraints []string `json:"missing_constraints,omitempty"`
}

func (p *Provider) approvalJSONOf(v *Approval) userApprovalJSON {
	out := userApprovalJSON{ID: v.ID, Method: v.Method, Kind: v.Kind, AgentID: v.AgentID, AgentName: v.AgentName,
		Mode: v.Mode, HostID: v.HostID, HostName: v.HostName, NewHost: v.NewHost, Reason: v.Reason,
		BindingMessage: v.BindingMessage, ExpiresAt: v.ExpiresAt, ExpiresIn: int(v.ExpiresAt.Sub(p.now()) / time.Second),
		Capabilities: []userApprovalCapJSON{}}
	if v.Call != nil {
		out.Preview = v.Call.Preview
	}
	for _, c := range v.Capabilities {
		out.Capabilities = append(out.Capabilities, userApprovalCapJSON{Name: c.Name, Description: c.Description,
			Approval: c.Approval, Risk: c.Risk, Constraints: c.Constraints, MissingConstraints: c.MissingConstraints})
	}
	return out
}

func (p *Provider) apiApprovals(w http.ResponseWriter, r *http.Request, u *User) error {
	aps, err := p.UserApprovals(r.Context(), u.ID)
	if err != nil {
		return err
	}
	out := make([]userApprovalJSON, 0, len(aps))
	for _, v := range aps {
		out = append(out, p.approvalJSONOf(v))
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": out})
	return nil
}

// userApproval loads a request the user may see by id.
func (p *Provider) userApproval(ctx context.Context, u *User, id string) (*Approval, error) {
	if id == "" {
		return nil, ErrApprovalNotFound
	}
	return p.approvalFor(ctx, u, approvalTarget{id: id})
}

func (p *Provider) apiApproval(w http.ResponseWriter, r *http.Request, u *User) error {
	v, err := p.userApproval(r.Context(), u, r.PathValue("approval_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, p.approvalJSONOf(v))
	return nil
}

// readDecisionConstraints reads a decision's "constraints": an object
// of constraint objects keyed by capability name.
func readDecisionConstraints(raw json.RawMessage) (map[string]map[string]json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	m, err := parseObject(raw)
	if err != nil {
		return nil, badRequest("constraints must be an object of constraints by capability name")
	}
	out := make(map[string]map[string]json.RawMessage, len(m))
	for name, c := range m {
		cm, err := parseObject(c)
		if err != nil {
			return nil, badRequest(fmt.Sprintf("constraints.%s must be an object of constraints by input field", name))
		}
		out[name] = cm
	}
	return out, nil
}

func (p *Provider) apiDecide(w http.ResponseWriter, r *http.Request, u *User) error {
	ctx := r.Context()
	v, err := p.userApproval(ctx, u, r.PathValue("approval_id"))
	if err != nil {
		return err
	}
	m, err := readObject(r)
	if err != nil {
		return err
	}
	decision, err := reqString(m, "decision")
	if err != nil {
		return err
	}
	d := Decision{ApprovalID: v.ID, UserID: u.ID}
	if d.Reason, err = optString(m, "reason"); err != nil {
		return err
	}
	switch decision {
	case "deny":
		d.Deny = true
	case "approve":
		if raw, ok := m["capabilities"]; ok {
			if json.Unmarshal(raw, &d.Capabilities) != nil || d.Capabilities == nil {
				return badRequest("capabilities must be an array of the requested capability names")
			}
		}
		if d.Constraints, err = readDecisionConstraints(m["constraints"]); err != nil {
			return err
		}
	default:
		return badRequest(`decision must be "approve" or "deny"`)
	}
	if !d.Deny && v.NeedsPresence(d.Capabilities) {
		typed, err := optString(m, "presence_code")
		if err != nil {
			return err
		}
		token, cred, answered, err := presenceAnswer(m)
		if err != nil {
			return err
		}
		switch {
		case p.presence != nil:
			d.PresenceConfirmed = p.presence(r, u, v) == nil
		case answered:
			if err := p.verifyPresence(ctx, u, decisionBinding(v, d.Capabilities, d.Constraints), token, cred); err != nil {
				return presenceError(err)
			}
			d.PresenceConfirmed = true
		case typed != "" && !p.devPresenceCode:
			return presenceError(errDevCodeOff)
		case typed != "":
			d.PresenceConfirmed = p.checkPresenceCode(ctx, v, typed) == nil
		}
	}
	if err := p.Decide(ctx, d); err != nil {
		return err
	}
	status := "approved"
	if d.Deny {
		status = "denied"
	}
	writeJSON(w, http.StatusOK, map[string]any{"approval_id": v.ID, "status": status})
	return nil
}
