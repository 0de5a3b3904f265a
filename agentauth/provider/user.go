package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/core"
)

// Errors of the signed-in user's operations (the user API and the "Your
// agents" page).
var (
	// ErrNoSuchAgent means the agent does not exist or is not the user's:
	// the two are not told apart, so that a user cannot probe ids.
	ErrNoSuchAgent = errors.New("provider: no such agent among the user's")
	// ErrNoSuchHost is ErrNoSuchAgent for hosts.
	ErrNoSuchHost = errors.New("provider: no such host among the user's")
	// ErrNoSuchGrant means the agent holds no active grant of the
	// capability.
	ErrNoSuchGrant = errors.New("provider: the agent holds no active grant of this capability")
)

// AgentStateError refuses an operation that needs an agent in another
// state (granting to a revoked agent, say).
type AgentStateError struct {
	// Status is the agent's status.
	Status string
}

// Error implements error.
func (e *AgentStateError) Error() string { return "provider: the agent is " + e.Status }

// UserAgent is an agent as the user it acts for sees it: in the user API
// (as JSON) and on the "Your agents" page.
type UserAgent struct {
	ID          string      `json:"agent_id"`
	Name        string      `json:"name"`
	HostID      string      `json:"host_id"`
	HostName    string      `json:"host_name"`
	Mode        string      `json:"mode"`
	Status      string      `json:"status"`
	UserID      string      `json:"user_id,omitempty"`
	Grants      []UserGrant `json:"agent_capability_grants"`
	CreatedAt   time.Time   `json:"created_at"`
	ActivatedAt *time.Time  `json:"activated_at,omitempty"`
	LastUsedAt  *time.Time  `json:"last_used_at,omitempty"`
	ExpiresAt   *time.Time  `json:"expires_at,omitempty"`
}

// UserGrant is one grant of a UserAgent, with everything the user needs
// to judge it.
type UserGrant struct {
	Capability  string                     `json:"capability"`
	Description string                     `json:"description,omitempty"`
	Status      string                     `json:"status"`
	Approval    core.Approval              `json:"approval_strength,omitempty"`
	Risk        core.Risk                  `json:"risk,omitempty"`
	Constraints map[string]json.RawMessage `json:"constraints,omitempty"`
	GrantedBy   string                     `json:"granted_by,omitempty"`
	DeniedBy    string                     `json:"denied_by,omitempty"`
	Reason      string                     `json:"reason,omitempty"`
	ExpiresAt   *time.Time                 `json:"expires_at,omitempty"`
	// Expired marks an active grant past its ExpiresAt: no longer
	// effective.
	Expired bool `json:"expired,omitempty"`
	// Units maps each amount field of the capability to the field that
	// gives its unit (core.WithUnit), for showing bounds with their
	// unit.
	Units map[string]string `json:"-"`
}

// Effective reports whether the grant can be used now: active and not
// expired.
func (g UserGrant) Effective() bool { return g.Status == agentcap.StatusActive && !g.Expired }

// UserHost is a host linked to the user.
type UserHost struct {
	ID                  string     `json:"host_id"`
	Name                string     `json:"name"`
	Status              string     `json:"status"`
	DefaultCapabilities []string   `json:"default_capabilities"`
	CreatedAt           time.Time  `json:"created_at"`
	LastUsedAt          *time.Time `json:"last_used_at,omitempty"`
	// OAuthClient is the client_id of the MCP host the provider made
	// this host for, when the user connected one through OAuth.
	OAuthClient string `json:"oauth_client,omitempty"`
}

// GrantRequest is a capability the user grants an agent of theirs.
type GrantRequest struct {
	Name        string
	Constraints map[string]json.RawMessage
}

// HostUpdate changes a host of the user; nil fields are left alone.
type HostUpdate struct {
	Name                *string
	DefaultCapabilities *[]string
}

func (p *Provider) userAgentView(a *store.Agent, hostName string) UserAgent {
	now := p.now()
	v := UserAgent{
		ID: a.ID, Name: a.Name, HostID: a.HostID, HostName: hostName, Mode: a.Mode,
		Status: a.DirectoryAgent(now).Status, UserID: a.UserID, CreatedAt: a.CreatedAt,
		ActivatedAt: a.ActivatedAt, LastUsedAt: a.LastUsedAt, ExpiresAt: a.ExpiresAt,
		Grants: make([]UserGrant, 0, len(a.Grants)),
	}
	for _, g := range a.Grants {
		ug := UserGrant{Capability: g.Capability, Status: g.Status, Constraints: g.Constraints,
			GrantedBy: g.GrantedBy, DeniedBy: g.DeniedBy, Reason: g.Reason, ExpiresAt: g.ExpiresAt,
			Expired: g.Status == agentcap.StatusActive && g.ExpiresAt != nil && !now.Before(*g.ExpiresAt)}
		if def, ok := p.reg.Lookup(g.Capability); ok {
			ug.Description, ug.Approval, ug.Risk, ug.Units = def.Description(), def.Approval(), def.Risk(), def.Units()
		}
		v.Grants = append(v.Grants, ug)
	}
	sort.SliceStable(v.Grants, func(i, j int) bool { return v.Grants[i].Capability < v.Grants[j].Capability })
	return v
}

func userHostView(h *store.Host) UserHost {
	caps := h.DefaultCapabilities
	if caps == nil {
		caps = []string{}
	}
	return UserHost{ID: h.ID, Name: h.Name, Status: h.Status, DefaultCapabilities: caps,
		CreatedAt: h.CreatedAt, LastUsedAt: h.LastUsedAt, OAuthClient: h.OAuthClient}
}

// ownAgent loads agentID if it acts for userID or runs under a host
// linked to userID.
func (p *Provider) ownAgent(ctx context.Context, userID, agentID string) (*store.Agent, *store.Host, error) {
	if userID == "" {
		return nil, nil, ErrNoSuchAgent
	}
	a, err := p.store.GetAgent(ctx, agentID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, ErrNoSuchAgent
	}
	if err != nil {
		return nil, nil, err
	}
	h, err := p.store.GetHost(ctx, a.HostID)
	if err != nil {
		return nil, nil, err
	}
	if a.UserID != userID && h.UserID != userID {
		return nil, nil, ErrNoSuchAgent
	}
	return a, h, nil
}

// ownHost loads hostID if it is linked to userID.
func (p *Provider) ownHost(ctx context.Context, userID, hostID string) (*store.Host, error) {
	h, err := p.store.GetHost(ctx, hostID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (userID == "" || h.UserID != userID)) {
		return nil, ErrNoSuchHost
	}
	return h, err
}

// UserAgents returns the agents of userID (acting for the user, or under
// a host linked to the user), newest first.
func (p *Provider) UserAgents(ctx context.Context, userID string) ([]UserAgent, error) {
	if userID == "" {
		return nil, fmt.Errorf("%w: no user", ErrInvalidDecision)
	}
	agents, err := p.store.ListUserAgents(ctx, userID)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	out := make([]UserAgent, 0, len(agents))
	for i := len(agents) - 1; i >= 0; i-- {
		a := agents[i]
		name, ok := names[a.HostID]
		if !ok {
			h, err := p.store.GetHost(ctx, a.HostID)
			if err != nil {
				return nil, err
			}
			name = h.Name
			names[a.HostID] = name
		}
		out = append(out, p.userAgentView(a, name))
	}
	return out, nil
}

// UserAgent returns one agent of userID.
func (p *Provider) UserAgent(ctx context.Context, userID, agentID string) (*UserAgent, error) {
	a, h, err := p.ownAgent(ctx, userID, agentID)
	if err != nil {
		return nil, err
	}
	v := p.userAgentView(a, h.Name)
	return &v, nil
}

// RenameAgent changes the display name of an agent of userID.
func (p *Provider) RenameAgent(ctx context.Context, userID, agentID, name string) error {
	if _, _, err := p.ownAgent(ctx, userID, agentID); err != nil {
		return err
	}
	return p.store.SetAgentName(ctx, agentID, displayText(name, maxNameRunes))
}

// RevokeAgent revokes an agent of userID (protocol §2.6: "the owning
// user"). Revoking a revoked agent again succeeds; an agent in another
// terminal state (rejected, claimed) is an *AgentStateError.
func (p *Provider) RevokeAgent(ctx context.Context, userID, agentID string) error {
	a, h, err := p.ownAgent(ctx, userID, agentID)
	if err != nil {
		return err
	}
	live := []string{agentcap.StatusPending, agentcap.StatusActive, agentcap.StatusExpired}
	err = p.store.UpdateAgentStatus(ctx, agentID, live, agentcap.StatusRevoked)
	var se *store.StatusError
	switch {
	case err == nil:
		p.record(ctx, agentRecord(audit.EventAgentRevoked, a, h, "revoked by the user"))
		return nil
	case errors.As(err, &se) && se.Status == agentcap.StatusRevoked:
		return nil
	case errors.As(err, &se):
		return &AgentStateError{Status: se.Status}
	}
	return err
}

// RevokeGrant revokes one capability of an agent of userID: the grant
// becomes denied, by the user, and the agent can no longer execute the
// capability; it may ask for it again.
func (p *Provider) RevokeGrant(ctx context.Context, userID, agentID, capability string) error {
	a, h, err := p.ownAgent(ctx, userID, agentID)
	if err != nil {
		return err
	}
	err = p.store.UpdateGrantStatus(ctx, agentID, capability, store.GrantChange{
		From: []string{agentcap.StatusActive}, To: agentcap.StatusDenied, By: userID, Reason: "revoked by the user"})
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrStatus) {
		return ErrNoSuchGrant
	}
	if err == nil {
		r := agentRecord(audit.EventGrantsChanged, a, h, "revoked by the user")
		r.UserID, r.Capability = userID, capability
		p.record(ctx, r)
	}
	return err
}

// GrantCapabilities grants capabilities to an active delegated agent of
// userID, as the user: each becomes an active grant by the user, with
// the constraints given narrowed by Policy.Constraints and its lifetime
// from Policy.GrantTTL. A capability that requires constraints
// (core.WithRequiredConstraints) must be given them; one of approval
// strength webauthn needs presenceConfirmed (ErrPresenceRequired
// otherwise). Unknown capabilities are ErrInvalidDecision.
func (p *Provider) GrantCapabilities(ctx context.Context, userID, agentID string, reqs []GrantRequest, presenceConfirmed bool) error {
	a, h, err := p.ownAgent(ctx, userID, agentID)
	if err != nil {
		return err
	}
	if st := a.DirectoryAgent(p.now()).Status; st != agentcap.StatusActive || a.Mode != agentcap.ModeDelegated {
		if st == agentcap.StatusActive {
			st = a.Mode
		}
		return &AgentStateError{Status: st}
	}
	if len(reqs) == 0 {
		return fmt.Errorf("%w: no capabilities", ErrInvalidDecision)
	}
	now := p.now()
	var grants []store.Grant
	var seen []string
	for _, rq := range reqs {
		def, ok := p.reg.Lookup(rq.Name)
		if !ok || slices.Contains(seen, rq.Name) {
			return fmt.Errorf("%w: %q is unknown or named twice", ErrInvalidDecision, rq.Name)
		}
		seen = append(seen, rq.Name)
		if err := agentauth.ValidateConstraints(rq.Constraints); err != nil {
			return fmt.Errorf("%w: constraints of %s: %v", ErrInvalidDecision, rq.Name, err)
		}
		cons, err := p.effectiveConstraints(ctx, a, def, rq.Constraints)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidDecision, err)
		}
		if missing := missingConstraints(def, cons); len(missing) > 0 {
			return fmt.Errorf("%w: %s can only be granted with a constraint on %s", ErrInvalidDecision, rq.Name, strings.Join(missing, ", "))
		}
		if def.Approval() == core.ApprovalWebAuthn && !presenceConfirmed {
			return ErrPresenceRequired
		}
		grants = append(grants, store.Grant{Capability: rq.Name, Status: agentcap.StatusActive, Constraints: cons,
			GrantedBy: userID, Reason: "granted by the user", ExpiresAt: p.grantExpiry(ctx, a, def, now)})
	}
	if err := p.store.PutGrants(ctx, agentID, grants); err != nil {
		return err
	}
	r := agentRecord(audit.EventGrantsChanged, a, h, "granted by the user: "+grantSummary(grants))
	r.UserID = userID
	if len(grants) == 1 {
		r.Capability = grants[0].Capability
	}
	p.record(ctx, r)
	return nil
}

// UserHosts returns the hosts linked to userID, newest first.
func (p *Provider) UserHosts(ctx context.Context, userID string) ([]UserHost, error) {
	if userID == "" {
		return nil, fmt.Errorf("%w: no user", ErrInvalidDecision)
	}
	hosts, err := p.store.ListUserHosts(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]UserHost, 0, len(hosts))
	for i := len(hosts) - 1; i >= 0; i-- {
		out = append(out, userHostView(hosts[i]))
	}
	return out, nil
}

// UserHost returns one host of userID.
func (p *Provider) UserHost(ctx context.Context, userID, hostID string) (*UserHost, error) {
	h, err := p.ownHost(ctx, userID, hostID)
	if err != nil {
		return nil, err
	}
	v := userHostView(h)
	return &v, nil
}

// UpdateHost renames a host of userID or replaces its default
// capabilities (which its later agents get without asking, Policy
// AutoApprove permitting). Unknown capability names are
// ErrInvalidDecision.
func (p *Provider) UpdateHost(ctx context.Context, userID, hostID string, u HostUpdate) error {
	h, err := p.ownHost(ctx, userID, hostID)
	if err != nil {
		return err
	}
	if h.Status == agentcap.StatusRevoked || h.Status == agentcap.StatusRejected {
		return &AgentStateError{Status: "host " + h.Status}
	}
	if u.DefaultCapabilities != nil {
		caps := slices.Clone(*u.DefaultCapabilities)
		for _, c := range caps {
			if _, ok := p.reg.Lookup(c); !ok {
				return fmt.Errorf("%w: %q is not a capability", ErrInvalidDecision, c)
			}
		}
		slices.Sort(caps)
		caps = slices.Compact(caps)
		if err := p.store.SetHostDefaultCapabilities(ctx, hostID, caps); err != nil {
			return err
		}
		r := agentRecord(audit.EventGrantsChanged, nil, h, "host default capabilities: "+strings.Join(caps, ", "))
		r.UserID = userID
		p.record(ctx, r)
	}
	if u.Name != nil {
		return p.store.SetHostName(ctx, hostID, displayText(*u.Name, maxNameRunes))
	}
	return nil
}

// RevokeHost revokes a host of userID and, with it, every agent under it
// (protocol §2.11); it reports how many agents that revoked. Revoking a
// revoked host again succeeds.
func (p *Provider) RevokeHost(ctx context.Context, userID, hostID string) (int, error) {
	if _, err := p.ownHost(ctx, userID, hostID); err != nil {
		return 0, err
	}
	n, err := p.store.UpdateHostStatus(ctx, hostID, []string{agentcap.StatusActive, agentcap.StatusPending}, agentcap.StatusRevoked)
	var se *store.StatusError
	if errors.As(err, &se) && (se.Status == agentcap.StatusRevoked || se.Status == agentcap.StatusRejected) {
		return 0, nil
	}
	if err == nil {
		r := audit.Record{Event: audit.EventHostRevoked, UserID: userID, HostID: hostID,
			Detail: fmt.Sprintf("revoked by the user; %d agents revoked", n)}
		p.record(ctx, r)
	}
	return n, err
}

// UserApprovals returns the approval requests waiting for userID, oldest
// first: those addressed to the user (CIBA, calls to confirm) and those
// about an agent of the user or of a host linked to the user, which the
// user may decide.
func (p *Provider) UserApprovals(ctx context.Context, userID string) ([]*Approval, error) {
	if userID == "" {
		return nil, fmt.Errorf("%w: no user", ErrInvalidDecision)
	}
	aps, err := p.store.ListUserApprovals(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := []*Approval{}
	for _, ap := range aps {
		v, err := p.approvalView(ctx, ap, "")
		if errors.Is(err, ErrApprovalClosed) {
			continue
		}
		if err != nil {
			return nil, err
		}
		// The store lists every request about an agent of the user's
		// hosts; a call to confirm addressed to the agent's own user is
		// not this user's to see.
		ok, err := p.mayDecideByID(ctx, v, userID)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, v)
		}
	}
	return out, nil
}
