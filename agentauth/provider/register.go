package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/ratelimit"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
)

// registration is a parsed POST /agent/register body.
type registration struct {
	name, hostName, mode, reason string
	hints                        approvalHints
	caps                         []store.RequestedCapability
}

func (p *Provider) parseRegistration(m map[string]json.RawMessage) (*registration, error) {
	reg := &registration{}
	var err error
	if reg.name, err = reqString(m, "name"); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"host_name", &reg.hostName}, {"mode", &reg.mode}, {"reason", &reg.reason}} {
		if *f.dst, err = optString(m, f.name); err != nil {
			return nil, err
		}
	}
	if reg.hints, err = readHints(m); err != nil {
		return nil, err
	}
	reg.name = displayText(reg.name, maxNameRunes)
	reg.hostName = displayText(reg.hostName, maxNameRunes)
	reg.reason = displayText(reg.reason, maxReasonRunes)
	if reg.mode == "" {
		reg.mode = agentcap.ModeDelegated
	}
	if !slices.Contains(p.modes, reg.mode) {
		return nil, agentcap.NewError(agentcap.CodeUnsupportedMode, fmt.Sprintf("mode %q is not supported here; supported: %v", reg.mode, p.modes))
	}
	if reg.caps, err = p.parseRequested(m["capabilities"], false); err != nil {
		return nil, err
	}
	return reg, nil
}

// maxKIDBytes bounds an agent_kid. The verifier drops keys with longer
// kids from the key sets it fetches.
const maxKIDBytes = 256

// agentKey reads the agent key claims of a registration's host JWT. An
// agent_jwks_url must be one the verifier may fetch (see
// remotekeys.Cache.CheckURL): it is stored, and fetched once the agent
// is active.
func (p *Provider) agentKey(h *hostAuth) (store.AgentKey, error) {
	tok := h.tok
	switch {
	case len(tok.agentKey) > 0 && tok.agentJWKSURL != "":
		return store.AgentKey{}, badRequest("a registration carries agent_public_key or agent_jwks_url, not both")
	case len(tok.agentKey) > 0:
		k, err := parseJWK(tok.agentKey)
		if err != nil {
			if errors.Is(err, errUnsupportedKey) {
				return store.AgentKey{}, agentcap.NewError(agentcap.CodeUnsupportedAlgorithm, "agent_public_key: "+err.Error())
			}
			return store.AgentKey{}, badRequest("agent_public_key: " + err.Error())
		}
		if k.thumbprint == h.key.thumbprint {
			return store.AgentKey{}, badRequest("the agent key must differ from the host key")
		}
		return store.AgentKey{PublicKey: k.jwk, Thumbprint: k.thumbprint}, nil
	case tok.agentJWKSURL != "":
		if tok.agentKID == "" {
			return store.AgentKey{}, badRequest("agent_jwks_url needs agent_kid")
		}
		if len(tok.agentKID) > maxKIDBytes {
			return store.AgentKey{}, badRequest(fmt.Sprintf("agent_kid is longer than %d bytes", maxKIDBytes))
		}
		if err := p.keys.CheckURL(tok.agentJWKSURL); err != nil {
			return store.AgentKey{}, badRequest("agent_jwks_url cannot be fetched: " + err.Error())
		}
		if tok.agentJWKSURL == tok.hostJWKSURL {
			return store.AgentKey{}, badRequest("host and agent JWKS URLs must differ")
		}
		return store.AgentKey{JWKSURL: tok.agentJWKSURL, KID: tok.agentKID, Thumbprint: "jwks:" + tok.agentJWKSURL + "#" + tok.agentKID}, nil
	default:
		return store.AgentKey{}, badRequest("a registration's host JWT must carry agent_public_key or agent_jwks_url")
	}
}

// register serves POST /agent/register (protocol §5.3).
func (p *Provider) register(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	h, err := p.verifyHost(ctx, r, hostAny)
	if err != nil {
		return err
	}
	if h.host == nil {
		if err := p.limits.newHost(r); err != nil {
			return err
		}
	} else if err := p.limits.host(ctx, h.host.ID); err != nil {
		return err
	}
	m, err := readObject(r)
	if err != nil {
		return err
	}
	reg, err := p.parseRegistration(m)
	if err != nil {
		return err
	}
	key, err := p.agentKey(h)
	if err != nil {
		return err
	}
	if reg.mode == agentcap.ModeAutonomous && h.host != nil && h.host.UserID != "" {
		return linkedHostAutonomous()
	}
	if reg.mode == agentcap.ModeAutonomous && !p.autonomousAllowed(ctx, h.host) {
		return agentcap.NewError(agentcap.CodeUnauthorized, "this host may not register autonomous agents")
	}
	host := h.host
	if host != nil {
		existing, err := p.store.AgentByThumbprint(ctx, host.ID, key.Thumbprint)
		switch {
		case err == nil:
			return p.retryRegistration(ctx, w, existing, reg)
		case !errors.Is(err, store.ErrNotFound):
			return internalError(err)
		}
		if err := p.checkPending(ctx, host); err != nil {
			return err
		}
	} else if host, err = p.createHost(ctx, h, reg); err != nil {
		return err
	}

	agentID, err := p.newID("agt_")
	if err != nil {
		return internalError(err)
	}
	agent := &store.Agent{
		ID:        agentID,
		Name:      reg.name,
		HostID:    host.ID,
		Mode:      reg.mode,
		Status:    agentcap.StatusPending,
		AgentKey:  key,
		CreatedAt: p.now(),
	}
	if reg.mode == agentcap.ModeDelegated {
		agent.UserID = host.UserID
	}
	// Every grant starts pending with its effective constraints; what
	// policy allows without a user is then decided in one place.
	auto := true
	for _, rc := range reg.caps {
		def, _ := p.reg.Lookup(rc.Name)
		cons, err := p.effectiveConstraints(ctx, agent, def, rc.Constraints)
		if err != nil {
			return err
		}
		g := store.Grant{Capability: rc.Name, Status: agentcap.StatusPending, Constraints: cons, Reason: reg.reason}
		switch {
		case reg.mode == agentcap.ModeAutonomous:
			if p.grantAutonomous(ctx, host, def) {
				g.Status, g.GrantedBy = agentcap.StatusActive, "system:policy"
			} else {
				g.Status, g.DeniedBy, g.Reason = agentcap.StatusDenied, "system:policy", "autonomous agents of this host are not granted this capability"
			}
		case p.autoApprove(ctx, host, def):
			g.Status, g.GrantedBy = agentcap.StatusActive, "system:host_defaults"
		default:
			auto = false
		}
		if g.Status == agentcap.StatusActive {
			g.ExpiresAt = p.grantExpiry(ctx, agent, def, agent.CreatedAt)
		}
		agent.Grants = append(agent.Grants, g)
	}
	activeNow := (reg.mode == agentcap.ModeAutonomous && host.Status == agentcap.StatusActive) ||
		(auto && host.Status == agentcap.StatusActive && host.UserID != "")
	if !activeNow && reg.mode == agentcap.ModeDelegated {
		// The user decides the whole registration: grants the policy
		// would allow wait for it too, so the page shows everything the
		// agent will hold.
		for i := range agent.Grants {
			agent.Grants[i].Status, agent.Grants[i].GrantedBy, agent.Grants[i].ExpiresAt = agentcap.StatusPending, "", nil
		}
	}
	if err := p.store.CreateAgent(ctx, agent); err != nil {
		if errors.Is(err, store.ErrConflict) {
			// A concurrent registration with the same key won.
			if existing, err2 := p.store.AgentByThumbprint(ctx, host.ID, key.Thumbprint); err2 == nil {
				return p.retryRegistration(ctx, w, existing, reg)
			}
		}
		var se *store.StatusError
		if errors.As(err, &se) && se.Kind == "host" {
			return agentcap.NewError(agentcap.CodeHostRevoked, msgHostRevoked)
		}
		return internalError(err)
	}
	if activeNow {
		if err := p.store.ActivateAgent(ctx, agent.ID, []string{agentcap.StatusPending}, p.now(), p.lifetimes); err != nil {
			return internalError(err)
		}
	}
	p.record(ctx, agentRecord(audit.EventAgentRegistered, agent, host, registrationDetail(agent, activeNow)))
	var ap *approvalJSON
	if !activeNow {
		rq := approvalRequest{kind: KindRegistration, agent: agent, host: host, caps: reg.caps, hints: reg.hints}
		if ap, err = p.startApproval(ctx, rq); err != nil {
			return err
		}
	}
	stored, err := p.store.GetAgent(ctx, agent.ID)
	if err != nil {
		return internalError(err)
	}
	writeJSON(w, http.StatusOK, p.renderAgent(stored, ap, false))
	return nil
}

// checkPending refuses a new agent of a host that has Config.MaxPendingAgents
// agents waiting for approval already. Concurrent registrations of one
// host may each pass the check, so the bound can be passed by as many as
// run at once, which the host's rate limit bounds.
func (p *Provider) checkPending(ctx context.Context, host *store.Host) error {
	agents, err := p.store.ListAgents(ctx, host.ID)
	if err != nil {
		return internalError(err)
	}
	pending := 0
	for _, a := range agents {
		if a.Status == agentcap.StatusPending {
			pending++
		}
	}
	if pending < p.maxPending {
		return nil
	}
	return ratelimit.Error(ratelimit.Decision{RetryAfter: p.approvalLife},
		fmt.Sprintf("this host has %d agents waiting for approval, the most it may have; register another once one is decided", pending))
}

// createHost stores a host seen for the first time. It is pending (its
// identity is self-attested until a user approves it, protocol §8.10),
// except that a host allowed to run autonomous agents, registering one,
// is active: no user will ever approve it.
func (p *Provider) createHost(ctx context.Context, h *hostAuth, reg *registration) (*store.Host, error) {
	id, err := p.newID("hst_")
	if err != nil {
		return nil, internalError(err)
	}
	name := reg.hostName
	if name == "" {
		name = displayText(h.tok.hostNameClaim, maxNameRunes)
	}
	host := &store.Host{
		ID:         id,
		Name:       name,
		Thumbprint: h.key.thumbprint,
		Status:     agentcap.StatusPending,
		CreatedAt:  p.now(),
	}
	if h.tok.hostJWKSURL != "" {
		host.JWKSURL = h.tok.hostJWKSURL
	} else {
		host.PublicKey = h.key.jwk
	}
	if reg.mode == agentcap.ModeAutonomous {
		host.Status = agentcap.StatusActive
	}
	if p.policy.HostDefaults != nil {
		host.DefaultCapabilities = p.policy.HostDefaults(ctx, NewHost{Name: name, Thumbprint: h.key.thumbprint, Mode: reg.mode})
	}
	if err := p.store.CreateHost(ctx, host); err != nil {
		if errors.Is(err, store.ErrConflict) {
			// Another registration by the same new host won the race.
			if existing, err2 := p.store.HostByThumbprint(ctx, h.key.thumbprint); err2 == nil {
				return existing, nil
			}
		}
		return nil, internalError(err)
	}
	p.record(ctx, audit.Record{Event: audit.EventHostRegistered, HostID: id, Detail: host.Status + " host"})
	return p.store.GetHost(ctx, id)
}

// retryRegistration answers a registration whose agent key is already
// registered under the host: a pending agent gets its state and a fresh
// approval (the codes of earlier ones are not kept in the clear), any
// other is 409 agent_exists.
func (p *Provider) retryRegistration(ctx context.Context, w http.ResponseWriter, a *store.Agent, reg *registration) error {
	if a.Status != agentcap.StatusPending {
		return agentcap.NewError(agentcap.CodeAgentExists, "an agent with this key is already registered under this host; register with a new agent key").
			With("agent_id", a.ID)
	}
	var caps []store.RequestedCapability
	for _, g := range a.Grants {
		if g.Status == agentcap.StatusPending {
			caps = append(caps, store.RequestedCapability{Name: g.Capability, Constraints: g.Constraints})
		}
	}
	host, err := p.store.GetHost(ctx, a.HostID)
	if err != nil {
		return internalError(err)
	}
	ap, err := p.startApproval(ctx, approvalRequest{kind: KindRegistration, agent: a, host: host, caps: caps, hints: reg.hints})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, p.renderAgent(a, ap, false))
	return nil
}
