package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/core"
)

// Errors of the approval API.
var (
	// ErrApprovalNotFound means no approval request has the user code.
	ErrApprovalNotFound = errors.New("provider: no approval request with this code")
	// ErrApprovalClosed means the request was already decided, expired,
	// or its agent can no longer be approved.
	ErrApprovalClosed = errors.New("provider: the approval request is closed")
	// ErrWrongUser means the host, or the agent, belongs to another user.
	ErrWrongUser = errors.New("provider: the agent's host belongs to another user")
	// ErrPresenceRequired means a capability of approval strength
	// webauthn was allowed without the extra confirmation.
	ErrPresenceRequired = errors.New("provider: a capability needs proof of presence")
	// ErrInvalidDecision means the decision names capabilities the
	// request did not ask for, or no user.
	ErrInvalidDecision = errors.New("provider: invalid decision")
)

// Approval is a pending approval request as its approver sees it.
type Approval struct {
	// ID identifies the request.
	ID string
	// Method is how the user was asked: device_authorization (the user
	// brought the code) or ciba (the provider notified the user).
	Method string
	// UserCode is the code the user entered, formatted for display;
	// empty when the request was opened by its ID (a CIBA request, or one
	// listed on the user's page).
	UserCode string
	// UserID is the user a CIBA request is addressed to: only that user
	// may decide it. Empty for device authorization.
	UserID string
	// Kind is "registration" for a new (or reactivated) agent,
	// "capabilities" for an active agent asking for more, and
	// "confirmation" for a call of an active agent that the user must
	// confirm (see Call).
	Kind string
	// AgentID, AgentName and Mode describe the agent. The name is the
	// agent's own choice: display it as untrusted text.
	AgentID, AgentName, Mode string
	// HostID and HostName describe its host; NewHost is set for a host
	// the provider has not approved yet. HostName is untrusted text.
	HostID, HostName string
	NewHost          bool
	// Reason and BindingMessage are the agent's words: untrusted text.
	Reason, BindingMessage string
	// Capabilities are those requested; for a confirmation, the one
	// capability called.
	Capabilities []RequestedCapability
	// Call is the call to confirm, for Kind "confirmation"; nil
	// otherwise.
	Call *CallToConfirm
	// ExpiresAt ends the request.
	ExpiresAt time.Time
}

// RequestedCapability is one capability of an approval request.
type RequestedCapability struct {
	Name        string
	Description string
	// Approval is the capability's approval strength; ApprovalWebAuthn
	// needs the extra confirmation.
	Approval core.Approval
	Risk     core.Risk
	// Constraints are those the grant will carry (the agent's proposal,
	// narrowed by server policy); nil for an unconstrained grant.
	Constraints map[string]json.RawMessage
	// MissingConstraints are the input fields a grant of the capability
	// must constrain that Constraints leave out: those it requires
	// (core.WithRequiredConstraints), and the unit of an amount that
	// Constraints bound (core.WithUnit). Allowing the capability needs
	// the user to constrain them (Decision.Constraints). Nil for a call
	// to confirm.
	MissingConstraints []string
	// Units maps each amount field of the capability to the field that
	// gives its unit (core.WithUnit), for showing bounds with their unit.
	Units    map[string]string
	Location string
}

// NeedsPresence reports whether allowing every capability of a needs
// the extra confirmation.
func (a *Approval) NeedsPresence(allowed []string) bool {
	for _, c := range a.Capabilities {
		if c.Approval == core.ApprovalWebAuthn && (allowed == nil || slices.Contains(allowed, c.Name)) {
			return true
		}
	}
	return false
}

// Decision is a user's decision about an approval request.
type Decision struct {
	// UserCode names the request, as the user typed it.
	UserCode string
	// ApprovalID names the request instead of UserCode, for requests the
	// user opened from their own list: a CIBA request addressed to them,
	// or a request about an agent of theirs. Only the addressed user, or
	// the user of the agent or its host, may decide by ID.
	ApprovalID string
	// UserID is the deciding user. Required.
	UserID string
	// Deny refuses the whole request: a registration's agent is
	// rejected, a capability request's grants are denied.
	Deny bool
	// Capabilities, when not nil, allows only those and denies the rest.
	// Nil allows every requested capability.
	Capabilities []string
	// Constraints are limits the user sets on the grants of allowed
	// capabilities, by capability and then by input field, in the form
	// of grant constraints. They narrow what the request proposed (see
	// Narrow), and must constrain every field a capability requires
	// (RequestedCapability.MissingConstraints): a grant without them
	// could never be used, so Decide refuses to make one.
	Constraints map[string]map[string]json.RawMessage
	// Reason is told to the agent for denied capabilities.
	Reason string
	// PresenceConfirmed records that the user passed the extra
	// confirmation that webauthn-strength capabilities need.
	PresenceConfirmed bool
}

// userCodeAlphabet has no vowels, so that codes spell no words, and no
// letters easily confused with digits (RFC 8628 §6.1).
const userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"

const userCodeLength = 8

// normalizeUserCode returns a user code as stored: upper case, without
// the separators and spaces users type. Lookups use it, so "bcdf-ghjk"
// finds BCDF-GHJK.
func normalizeUserCode(code string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(code) {
		if r == '-' || r == ' ' {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// formatUserCode returns a normalized user code as users read it:
// XXXX-XXXX.
func formatUserCode(code string) string {
	if len(code) != userCodeLength {
		return code
	}
	return code[:4] + "-" + code[4:]
}

func (p *Provider) newUserCode() (string, error) {
	b := make([]byte, userCodeLength)
	out := make([]byte, userCodeLength)
	for i := 0; i < userCodeLength; {
		if _, err := io.ReadFull(p.rand, b[:1]); err != nil {
			return "", err
		}
		// 240 is the largest multiple of 20 below 256: rejecting the
		// rest keeps every letter equally likely.
		if b[0] >= 240 {
			continue
		}
		out[i] = userCodeAlphabet[int(b[0])%len(userCodeAlphabet)]
		i++
	}
	return string(out), nil
}

// approvalRequest is what starts an approval: the agent and its host,
// the capabilities the user is asked for, and the client's hints
// (protocol §5.3, §5.4: binding_message, preferred_method, login_hint).
type approvalRequest struct {
	kind  string // registration, capabilities or reactivation
	agent *store.Agent
	host  *store.Host
	caps  []store.RequestedCapability
	hints approvalHints
}

// approvalHints are the client's approval hints, read from a request body.
type approvalHints struct {
	binding, preferred, loginHint string
}

// readHints reads binding_message, preferred_method and login_hint.
func readHints(m map[string]json.RawMessage) (approvalHints, error) {
	var h approvalHints
	var err error
	for _, f := range []struct {
		name string
		dst  *string
	}{{"binding_message", &h.binding}, {"preferred_method", &h.preferred}, {"login_hint", &h.loginHint}} {
		if *f.dst, err = optString(m, f.name); err != nil {
			return h, err
		}
	}
	h.binding = displayText(h.binding, maxBindingRunes)
	h.loginHint = displayText(h.loginHint, maxNameRunes)
	return h, nil
}

// startApproval chooses the approval method (protocol §7.5), creates the
// request and returns the approval object to send.
func (p *Provider) startApproval(ctx context.Context, rq approvalRequest) (*approvalJSON, error) {
	method, userID, err := p.chooseMethod(ctx, rq)
	if err != nil {
		return nil, err
	}
	id, err := p.newID("apr_")
	if err != nil {
		return nil, internalError(err)
	}
	now := p.now()
	for range 5 {
		code, err := p.newUserCode()
		if err != nil {
			return nil, internalError(err)
		}
		formatted := formatUserCode(code)
		ap := &store.Approval{
			ID:             id,
			Method:         method,
			AgentID:        rq.agent.ID,
			HostID:         rq.agent.HostID,
			Capabilities:   rq.caps,
			UserCode:       code,
			Status:         store.ApprovalPending,
			Interval:       p.pollInterval / 2,
			ExpiresAt:      now.Add(p.approvalLife),
			BindingMessage: rq.hints.binding,
			CreatedAt:      now,
		}
		if method == store.MethodCIBA {
			ap.UserID = userID
			ap.BindingMessage = cibaBindingMessage(rq.hints.binding, rq.agent.Name, formatted)
		}
		err = p.store.CreateApproval(ctx, ap)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, internalError(err)
		}
		out := &approvalJSON{
			Method:         method,
			BindingMessage: ap.BindingMessage,
			ExpiresIn:      int(p.approvalLife / time.Second),
			Interval:       int(p.pollInterval / time.Second),
		}
		if method == store.MethodCIBA {
			p.notify(ctx, rq, ap)
			return out, nil
		}
		out.VerificationURI = p.verificationURI
		out.VerificationURIComplete = p.verificationURI + "?code=" + url.QueryEscape(formatted)
		out.UserCode = formatted
		return out, nil
	}
	return nil, internalError(errors.New("no free user code after 5 draws"))
}

// PendingApproval returns the pending approval request with the user
// code, for the approval page or an application's own. A CIBA request is
// addressed to its user and is never found by code: see
// PendingApprovalByID. Whoever holds the code gets the request: an
// application's own page must show it only to the user Decide would let
// decide it (Approval.UserID for a call to confirm, the user of a linked
// host), since a call's preview is that user's business.
func (p *Provider) PendingApproval(ctx context.Context, userCode string) (*Approval, error) {
	code := normalizeUserCode(userCode)
	if code == "" {
		return nil, ErrApprovalNotFound
	}
	ap, err := p.store.ApprovalByUserCode(ctx, code)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrApprovalNotFound
	}
	if err != nil {
		return nil, err
	}
	if ap.Method == store.MethodCIBA {
		return nil, ErrApprovalNotFound
	}
	return p.approvalView(ctx, ap, formatUserCode(code))
}

// PendingApprovalByID returns the pending approval request with the id,
// as listed by UserApprovals. Callers check that the request is the
// signed-in user's to see; Decide checks it again.
func (p *Provider) PendingApprovalByID(ctx context.Context, id string) (*Approval, error) {
	if id == "" {
		return nil, ErrApprovalNotFound
	}
	ap, err := p.store.GetApproval(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrApprovalNotFound
	}
	if err != nil {
		return nil, err
	}
	return p.approvalView(ctx, ap, "")
}

// approvalView describes a pending request for its approver.
func (p *Provider) approvalView(ctx context.Context, ap *store.Approval, userCode string) (*Approval, error) {
	if ap.Status != store.ApprovalPending || !p.now().Before(ap.ExpiresAt) {
		return nil, ErrApprovalClosed
	}
	agent, err := p.store.GetAgent(ctx, ap.AgentID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrApprovalClosed
	}
	if err != nil {
		return nil, err
	}
	host, err := p.store.GetHost(ctx, agent.HostID)
	if err != nil {
		return nil, err
	}
	v := &Approval{
		ID:             ap.ID,
		Method:         ap.Method,
		UserCode:       userCode,
		AgentID:        agent.ID,
		AgentName:      agent.Name,
		Mode:           agent.Mode,
		HostID:         host.ID,
		HostName:       host.Name,
		NewHost:        host.Status == agentcap.StatusPending,
		BindingMessage: ap.BindingMessage,
		ExpiresAt:      ap.ExpiresAt,
	}
	if ap.Method == store.MethodCIBA || ap.Call != nil {
		v.UserID = ap.UserID
	}
	switch {
	case ap.Call != nil && agent.Status == agentcap.StatusActive:
		v.Kind = KindConfirmation
		v.Call = &CallToConfirm{Capability: ap.Call.Capability, Preview: ap.Call.Preview}
	case ap.Call != nil:
		return nil, ErrApprovalClosed
	case agent.Status == agentcap.StatusPending:
		v.Kind = "registration"
	case agent.Status == agentcap.StatusActive:
		v.Kind = "capabilities"
	default:
		return nil, ErrApprovalClosed
	}
	for _, rc := range ap.Capabilities {
		c := RequestedCapability{Name: rc.Name}
		if def, ok := p.reg.Lookup(rc.Name); ok {
			c.Description, c.Approval, c.Risk, c.Location = def.Description(), def.Approval(), def.Risk(), def.Location()
			c.Units = def.Units()
		}
		for _, g := range agent.Grants {
			if g.Capability == rc.Name && v.Call == nil {
				c.Constraints = g.Constraints
				if v.Reason == "" {
					v.Reason = g.Reason
				}
			}
		}
		if def, ok := p.reg.Lookup(rc.Name); ok && v.Call == nil {
			c.MissingConstraints = missingConstraints(def, c.Constraints)
		}
		v.Capabilities = append(v.Capabilities, c)
	}
	return v, nil
}

// mayDecide reports whether userID may see and decide a request. A
// personal one (a CIBA request, a call to confirm) is its addressee's.
// Any other is the user's of its agent and of the agent's host, when they
// have one, and otherwise (a device authorization from a new host)
// anyone's who brings its code; a request opened byID, from the user's
// own list, must moreover concern an agent of the user or of a host
// linked to the user. Decide refuses everyone else.
func (p *Provider) mayDecide(ctx context.Context, personal bool, addressee, agentID, userID string, byID bool) (bool, error) {
	if userID == "" {
		return false, nil
	}
	if personal {
		return addressee == userID, nil
	}
	agent, err := p.store.GetAgent(ctx, agentID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	host, err := p.store.GetHost(ctx, agent.HostID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if (host.UserID != "" && host.UserID != userID) || (agent.UserID != "" && agent.UserID != userID) {
		return false, nil
	}
	return !byID || host.UserID == userID || agent.UserID == userID, nil
}

// mayDecideByID is mayDecide for a request v opened by its ID.
func (p *Provider) mayDecideByID(ctx context.Context, v *Approval, userID string) (bool, error) {
	return p.mayDecide(ctx, v.Method == store.MethodCIBA || v.Kind == KindConfirmation, v.UserID, v.AgentID, userID, true)
}

// Decide applies a user's decision to the approval request with
// d.UserCode. Of concurrent decisions about one request exactly one wins;
// the others get ErrApprovalClosed.
//
// Approving a registration activates the agent with the allowed grants,
// activates a pending host and links the host to the user (protocol
// §2.9); the other requested capabilities are denied. Approving a
// capability request activates the allowed grants. A denied registration
// rejects the agent.
//
// A grant must constrain every input field its capability requires
// (core.WithRequiredConstraints), or it could never be used: allowing a
// capability whose grant would leave one unconstrained, after the
// request's constraints are narrowed by d.Constraints, is
// ErrInvalidDecision naming the fields, and changes nothing (see
// RequestedCapability.MissingConstraints).
func (p *Provider) Decide(ctx context.Context, d Decision) error {
	if d.UserID == "" {
		return fmt.Errorf("%w: no user", ErrInvalidDecision)
	}
	var v *Approval
	var err error
	if d.ApprovalID != "" {
		if v, err = p.PendingApprovalByID(ctx, d.ApprovalID); err != nil {
			return err
		}
		ok, err := p.mayDecideByID(ctx, v, d.UserID)
		if err != nil {
			return err
		}
		if !ok {
			return ErrWrongUser
		}
	} else if v, err = p.PendingApproval(ctx, d.UserCode); err != nil {
		return err
	}
	if (v.Method == store.MethodCIBA || v.Kind == KindConfirmation) && v.UserID != d.UserID {
		return ErrWrongUser
	}
	agent, err := p.store.GetAgent(ctx, v.AgentID)
	if err != nil {
		return err
	}
	host, err := p.store.GetHost(ctx, agent.HostID)
	if err != nil {
		return err
	}
	if (host.UserID != "" && host.UserID != d.UserID) || (agent.UserID != "" && agent.UserID != d.UserID) {
		return ErrWrongUser
	}
	requested := make([]string, len(v.Capabilities))
	for i, c := range v.Capabilities {
		requested[i] = c.Name
	}
	allowed := requested
	switch {
	case d.Deny:
		allowed = nil
	case d.Capabilities != nil:
		for _, c := range d.Capabilities {
			if !slices.Contains(requested, c) {
				return fmt.Errorf("%w: %q was not requested", ErrInvalidDecision, c)
			}
		}
		allowed = d.Capabilities
	}
	limits, err := p.decisionConstraints(v, d, allowed)
	if err != nil {
		return err
	}
	if !d.Deny && v.NeedsPresence(allowed) && !d.PresenceConfirmed {
		return ErrPresenceRequired
	}
	if v.Kind == KindConfirmation && !d.Deny && len(allowed) == 0 {
		// Allowing nothing of a call is refusing it.
		d.Deny = true
	}
	outcome := store.ApprovalApproved
	if d.Deny {
		outcome = store.ApprovalDenied
	}
	now := p.now()
	if err := p.store.DecideApproval(ctx, v.ID, outcome, d.UserID, now); err != nil {
		if errors.Is(err, store.ErrStatus) {
			return ErrApprovalClosed
		}
		return err
	}
	if v.Kind == KindConfirmation {
		// A call is confirmed or not: no grant changes. The token is
		// issued when the agent polls.
		r := audit.Record{Event: audit.EventApprovalApproved, UserID: d.UserID, AgentID: agent.ID, HostID: host.ID,
			Capability: v.Call.Capability, Detail: "call confirmed: " + v.Call.Capability}
		if d.Deny {
			r.Event, r.Detail = audit.EventConfirmationDenied, "call refused: "+v.Call.Capability
		}
		p.record(ctx, r)
		return nil
	}
	event := audit.EventApprovalApproved
	if d.Deny {
		event = audit.EventApprovalDenied
	}
	p.record(ctx, audit.Record{Event: event, UserID: d.UserID, AgentID: agent.ID, HostID: host.ID,
		Detail: decisionDetail(v, allowed, d.Deny)})
	reason := displayText(d.Reason, maxReasonRunes)
	if reason == "" {
		reason = "not approved by the user"
	}
	setGrants := func() error {
		for _, name := range requested {
			c := store.GrantChange{From: []string{agentcap.StatusPending}, To: agentcap.StatusDenied, By: d.UserID, Reason: reason}
			if slices.Contains(allowed, name) {
				if cons, ok := limits[name]; ok {
					if err := p.limitGrant(ctx, agent, name, cons); err != nil {
						return err
					}
				}
				def, _ := p.reg.Lookup(name)
				c = store.GrantChange{From: []string{agentcap.StatusPending}, To: agentcap.StatusActive, By: d.UserID,
					ExpiresAt: p.grantExpiry(ctx, agent, def, now)}
			}
			if err := p.store.UpdateGrantStatus(ctx, agent.ID, name, c); err != nil && !errors.Is(err, store.ErrStatus) && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return nil
	}
	if v.Kind == "capabilities" {
		return setGrants()
	}
	if d.Deny {
		if err := setGrants(); err != nil {
			return err
		}
		if err := p.store.UpdateAgentStatus(ctx, agent.ID, []string{agentcap.StatusPending}, agentcap.StatusRejected); err != nil && !errors.Is(err, store.ErrStatus) {
			return err
		}
		return p.closeSiblings(ctx, agent.ID, v.ID, now)
	}
	if host.Status == agentcap.StatusPending {
		if _, err := p.store.UpdateHostStatus(ctx, host.ID, []string{agentcap.StatusPending}, agentcap.StatusActive); err != nil && !errors.Is(err, store.ErrStatus) {
			return err
		}
	}
	if agent.Mode == agentcap.ModeDelegated {
		if err := p.linkHost(ctx, host.ID, d.UserID); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return ErrWrongUser
			}
			return err
		}
	}
	if err := setGrants(); err != nil {
		return err
	}
	if err := p.store.ActivateAgent(ctx, agent.ID, []string{agentcap.StatusPending}, now, p.lifetimes); err != nil && !errors.Is(err, store.ErrStatus) {
		return err
	}
	return p.closeSiblings(ctx, agent.ID, v.ID, now)
}

// decisionConstraints checks the constraints of a decision about v that
// allows allowed, and returns the constraints of each grant the user
// limited. It refuses (ErrInvalidDecision) constraints on a capability
// not allowed or on a call to confirm, malformed ones, ones that
// contradict the request's, and an allowed capability whose grant would
// leave a field it requires unconstrained.
func (p *Provider) decisionConstraints(v *Approval, d Decision, allowed []string) (map[string]map[string]json.RawMessage, error) {
	if d.Deny {
		return nil, nil
	}
	for name, c := range d.Constraints {
		if len(c) > 0 && (v.Kind == KindConfirmation || !slices.Contains(allowed, name)) {
			return nil, fmt.Errorf("%w: constraints are set on %s, which is not allowed as a grant", ErrInvalidDecision, name)
		}
	}
	if v.Kind == KindConfirmation {
		return nil, nil
	}
	out := map[string]map[string]json.RawMessage{}
	for _, c := range v.Capabilities {
		if !slices.Contains(allowed, c.Name) {
			continue
		}
		def, ok := p.reg.Lookup(c.Name)
		if !ok {
			continue
		}
		cons := c.Constraints
		if added := d.Constraints[c.Name]; len(added) > 0 {
			var err error
			if cons, err = Narrow(c.Constraints, added); err != nil {
				return nil, fmt.Errorf("%w: constraints of %s: %v", ErrInvalidDecision, c.Name, err)
			}
			out[c.Name] = cons
		}
		if missing := missingConstraints(def, cons); len(missing) > 0 {
			return nil, fmt.Errorf("%w: %s can only be allowed with a constraint on %s", ErrInvalidDecision, c.Name, strings.Join(missing, ", "))
		}
	}
	return out, nil
}

// missingConstraints returns the fields a grant of def with cons must
// constrain and does not: those def requires (core.WithRequiredConstraints)
// and the unit of each amount cons bounds (core.WithUnit), as the
// verifier reads them.
func missingConstraints(def *core.Definition, cons map[string]json.RawMessage) []string {
	return agentauth.MissingConstraints(cons, def.RequiredConstraints(), def.Units())
}

// limitGrant gives the agent's pending grant of capability the
// constraints the user set, before Decide activates it.
func (p *Provider) limitGrant(ctx context.Context, agent *store.Agent, capability string, cons map[string]json.RawMessage) error {
	for _, g := range agent.Grants {
		if g.Capability == capability && g.Status == agentcap.StatusPending {
			g.Constraints = cons
			return p.store.PutGrants(ctx, agent.ID, []store.Grant{g})
		}
	}
	return nil
}

// supersededBy is recorded as the deciding user of approval requests
// closed because another request for the same agent was decided.
const supersededBy = "system:superseded"

// closeSiblings closes the other pending requests of an agent whose
// registration was decided: a registration retried while pending leaves
// one request per try, and only one decision may count.
func (p *Provider) closeSiblings(ctx context.Context, agentID, decided string, now time.Time) error {
	aps, err := p.store.ListApprovals(ctx, agentID)
	if err != nil {
		return err
	}
	for _, ap := range aps {
		if ap.ID == decided || ap.Status != store.ApprovalPending || ap.Call != nil {
			continue
		}
		if err := p.store.DecideApproval(ctx, ap.ID, store.ApprovalDenied, supersededBy, now); err != nil && !errors.Is(err, store.ErrStatus) {
			return err
		}
	}
	return nil
}

// pollPending records a status poll of an agent with a pending approval
// and reports whether it came too soon (RFC 8628 slow_down), and the
// request's status after the poll ("" when the agent has none).
func (p *Provider) pollPending(ctx context.Context, agentID string) (slowDown bool, status string, err error) {
	aps, err := p.store.ListApprovals(ctx, agentID)
	if err != nil || len(aps) == 0 {
		return false, "", err
	}
	// Requests to confirm a call are polled on their own.
	aps = slices.DeleteFunc(aps, func(ap *store.Approval) bool { return ap.Call != nil })
	if len(aps) == 0 {
		return false, "", nil
	}
	// The newest pending request is the one being polled. Requests made
	// in the same instant have no order among them, so a decided one
	// listed after a pending one must not hide it.
	latest := aps[len(aps)-1]
	for i := len(aps) - 1; i >= 0; i-- {
		if aps[i].Status == store.ApprovalPending {
			latest = aps[i]
			break
		}
	}
	if latest.Status != store.ApprovalPending {
		return false, latest.Status, nil
	}
	a, slow, err := p.store.PollApproval(ctx, latest.ID, p.now())
	if err != nil {
		return false, "", err
	}
	return slow, a.Status, nil
}
