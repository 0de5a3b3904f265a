package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/core"
)

// agentRequest reads the JSON body of a request about one of the calling
// host's agents (named by "agent_id") and resolves the host and the agent.
func (p *Provider) agentRequest(ctx context.Context, r *http.Request, access hostAccess) (map[string]json.RawMessage, *hostAuth, *store.Agent, error) {
	m, err := readObject(r)
	if err != nil {
		return nil, nil, nil, err
	}
	id, err := optString(m, "agent_id")
	if err != nil {
		return nil, nil, nil, err
	}
	h, a, err := p.hostAgent(ctx, r, access, id)
	if err != nil {
		return nil, nil, nil, err
	}
	return m, h, a, nil
}

// hostAgent authenticates a host request and loads the agent it names,
// which must be registered under that host.
func (p *Provider) hostAgent(ctx context.Context, r *http.Request, access hostAccess, agentID string) (*hostAuth, *store.Agent, error) {
	h, err := p.verifyHost(ctx, r, access)
	if err != nil {
		return nil, nil, err
	}
	if err := p.limits.host(ctx, h.host.ID); err != nil {
		return nil, nil, err
	}
	if agentID == "" {
		return nil, nil, badRequest("agent_id is required")
	}
	a, err := p.store.GetAgent(ctx, agentID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, agentcap.NewError(agentcap.CodeAgentNotFound, "no such agent")
	}
	if err != nil {
		return nil, nil, internalError(err)
	}
	if a.HostID != h.host.ID {
		return nil, nil, agentcap.NewError(agentcap.CodeUnauthorized, "the agent is not registered under this host")
	}
	return h, a, nil
}

// agentStateError maps a non-active agent status to its protocol error.
func agentStateError(status string) *agentcap.Error {
	code := map[string]agentcap.Code{
		agentcap.StatusRevoked:  agentcap.CodeAgentRevoked,
		agentcap.StatusExpired:  agentcap.CodeAgentExpired,
		agentcap.StatusPending:  agentcap.CodeAgentPending,
		agentcap.StatusRejected: agentcap.CodeAgentRejected,
		agentcap.StatusClaimed:  agentcap.CodeAgentClaimed,
	}[status]
	if code == "" {
		return internalError(errors.New("agent has unknown status " + status))
	}
	return agentcap.NewError(code, "the agent is "+status)
}

// status serves GET /agent/status (protocol §5.5). While the agent
// itself waits for approval (a registration or reactivation), the call is
// the RFC 8628 poll of §7.1, and a poll sooner than half the advertised
// interval is 400 slow_down. The status of an active agent is a plain
// read of its record, even while a capability request of it waits: it is
// limited like any other request, by the host's rate limit (429 with
// Retry-After, §8.13), never answered slow_down.
func (p *Provider) status(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	_, a, err := p.hostAgent(ctx, r, hostKnownOrPending, r.URL.Query().Get("agent_id"))
	if err != nil {
		return err
	}
	if a.Status == agentcap.StatusPending {
		slow, _, err := p.pollPending(ctx, a.ID)
		if err != nil {
			return internalError(err)
		}
		if slow {
			return agentcap.NewError(agentcap.CodeSlowDown, "polling too often; wait the approval's interval between polls")
		}
	}
	writeJSON(w, http.StatusOK, p.renderAgent(a, nil, true))
	return nil
}

// approvalPoll serves POST /agent/approval/poll: RFC 8628 §3.5 polling
// for clients that want its error codes rather than the status document.
func (p *Provider) approvalPoll(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	_, _, a, err := p.agentRequest(ctx, r, hostKnownOrPending)
	if err != nil {
		return err
	}
	slow, status, err := p.pollPending(ctx, a.ID)
	if err != nil {
		return internalError(err)
	}
	switch {
	case slow:
		return agentcap.NewError(agentcap.CodeSlowDown, "polling too often; wait the approval's interval between polls")
	case status == store.ApprovalPending:
		return agentcap.NewError(agentcap.CodeAuthorizationPending, "the user has not decided yet")
	case status == store.ApprovalDenied && a.Status == agentcap.StatusRejected:
		return agentcap.NewError(agentcap.CodeAccessDenied, "the user denied the request")
	case status == store.ApprovalExpired:
		return agentcap.NewError(agentcap.CodeExpiredToken, "the approval request expired")
	}
	writeJSON(w, http.StatusOK, p.renderAgent(a, nil, true))
	return nil
}

// revoke serves POST /agent/revoke (protocol §5.7). Revoking a revoked
// agent again answers the same, so that a retried revocation succeeds.
func (p *Provider) revoke(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	_, h, a, err := p.agentRequest(ctx, r, hostKnownOrPending)
	if err != nil {
		return err
	}
	live := []string{agentcap.StatusPending, agentcap.StatusActive, agentcap.StatusExpired}
	if err := p.store.UpdateAgentStatus(ctx, a.ID, live, agentcap.StatusRevoked); err != nil {
		var se *store.StatusError
		if !errors.As(err, &se) {
			return internalError(err)
		}
		if se.Status != agentcap.StatusRevoked {
			return agentStateError(se.Status)
		}
	} else {
		p.record(ctx, agentRecord(audit.EventAgentRevoked, a, h.host, "revoked by its host"))
	}
	writeJSON(w, http.StatusOK, map[string]string{"agent_id": a.ID, "status": agentcap.StatusRevoked})
	return nil
}

// revokeHost serves POST /host/revoke (protocol §5.10): the host revokes
// itself and, in the same transaction, every agent under it.
func (p *Provider) revokeHost(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	h, err := p.verifyHost(ctx, r, hostKnownOrPending)
	if err != nil {
		return err
	}
	if err := p.limits.host(ctx, h.host.ID); err != nil {
		return err
	}
	n, err := p.store.UpdateHostStatus(ctx, h.host.ID, []string{agentcap.StatusActive, agentcap.StatusPending}, agentcap.StatusRevoked)
	if err != nil {
		var se *store.StatusError
		if errors.As(err, &se) {
			return agentcap.NewError(agentcap.CodeHostRevoked, msgHostRevoked)
		}
		return internalError(err)
	}
	p.record(ctx, agentRecord(audit.EventHostRevoked, nil, h.host, fmt.Sprintf("revoked by itself; %d agents revoked", n)))
	writeJSON(w, http.StatusOK, map[string]any{"host_id": h.host.ID, "status": agentcap.StatusRevoked, "agents_revoked": n})
	return nil
}

// reactivate serves POST /agent/reactivate (protocol §5.6): an expired
// agent returns to its host's default capabilities, granted without a
// user where policy allows (an autonomous agent, a delegated agent of a
// linked host), otherwise pending with an approval. Its absolute lifetime
// is never reset: past it, the agent is revoked.
func (p *Provider) reactivate(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	m, h, a, err := p.agentRequest(ctx, r, hostKnownActive)
	if err != nil {
		return err
	}
	hints, err := readHints(m)
	if err != nil {
		return err
	}
	status := a.DirectoryAgent(p.now()).Status
	switch status {
	case agentcap.StatusActive:
		writeJSON(w, http.StatusOK, p.renderAgent(a, nil, true))
		return nil
	case agentcap.StatusExpired:
	default:
		return agentStateError(status)
	}
	if a.Status == agentcap.StatusActive {
		// Its deadline passed but no sweep has marked it yet.
		err := p.store.TouchAgent(ctx, a.ID, p.now(), p.lifetimes)
		switch {
		case errors.Is(err, store.ErrLifetimeExceeded):
			return agentcap.NewError(agentcap.CodeAbsoluteLifetimeExceeded, "the agent's absolute lifetime has passed; register a new agent")
		case err != nil && !errors.Is(err, store.ErrStatus):
			return internalError(err)
		}
	}
	host := h.host
	auto := true
	var grants []store.Grant
	var caps []store.RequestedCapability
	for _, name := range host.DefaultCapabilities {
		def, ok := p.reg.Lookup(name)
		if !ok {
			continue
		}
		g := store.Grant{Capability: name, Status: agentcap.StatusPending, Reason: "reactivation"}
		if cons, err := p.effectiveConstraints(ctx, a, def, nil); err != nil {
			return err
		} else {
			g.Constraints = cons
		}
		switch {
		case a.Mode == agentcap.ModeAutonomous:
			if def.Approval() == core.ApprovalWebAuthn {
				continue
			}
			g.Status, g.GrantedBy = agentcap.StatusActive, "system:policy"
		case p.autoApprove(ctx, host, def):
			g.Status, g.GrantedBy = agentcap.StatusActive, "system:host_defaults"
		default:
			auto = false
		}
		if g.Status == agentcap.StatusActive {
			g.ExpiresAt = p.grantExpiry(ctx, a, def, p.now())
		}
		grants = append(grants, g)
		caps = append(caps, store.RequestedCapability{Name: name, Constraints: g.Constraints})
	}
	to := agentcap.StatusActive
	if !auto {
		to = agentcap.StatusPending
		for i := range grants {
			grants[i].Status, grants[i].GrantedBy, grants[i].ExpiresAt = agentcap.StatusPending, "", nil
		}
	}
	if err := p.store.ReactivateAgent(ctx, a.ID, to, grants, p.now(), p.lifetimes); err != nil {
		switch {
		case errors.Is(err, store.ErrLifetimeExceeded):
			return agentcap.NewError(agentcap.CodeAbsoluteLifetimeExceeded, "the agent's absolute lifetime has passed; register a new agent")
		case errors.Is(err, store.ErrStatus):
			var se *store.StatusError
			errors.As(err, &se)
			return agentStateError(se.Status)
		}
		return internalError(err)
	}
	p.record(ctx, agentRecord(audit.EventAgentReactivated, a, host, to+"; "+grantSummary(grants)))
	var ap *approvalJSON
	if to == agentcap.StatusPending {
		rq := approvalRequest{kind: KindReactivation, agent: a, host: host, caps: caps, hints: hints}
		if ap, err = p.startApproval(ctx, rq); err != nil {
			return err
		}
	}
	stored, err := p.store.GetAgent(ctx, a.ID)
	if err != nil {
		return internalError(err)
	}
	writeJSON(w, http.StatusOK, p.renderAgent(stored, ap, true))
	return nil
}

// rotateKey serves POST /agent/rotate-key (protocol §5.8).
func (p *Provider) rotateKey(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	m, h, a, err := p.agentRequest(ctx, r, hostKnownActive)
	if err != nil {
		return err
	}
	raw, ok := m["public_key"]
	if !ok {
		return badRequest("public_key is required")
	}
	k, err := parseJWK(raw)
	if err != nil {
		if errors.Is(err, errUnsupportedKey) {
			return agentcap.NewError(agentcap.CodeUnsupportedAlgorithm, "public_key: "+err.Error())
		}
		return badRequest("public_key: " + err.Error())
	}
	if k.thumbprint == h.key.thumbprint {
		return badRequest("the agent key must differ from the host key")
	}
	if err := p.store.RotateAgentKey(ctx, a.ID, store.AgentKey{PublicKey: k.jwk, Thumbprint: k.thumbprint}); err != nil {
		var se *store.StatusError
		switch {
		case errors.As(err, &se):
			return agentStateError(se.Status)
		case errors.Is(err, store.ErrConflict):
			return agentcap.NewError(agentcap.CodeAgentExists, "another agent of this host has that key")
		}
		return internalError(err)
	}
	p.record(ctx, agentRecord(audit.EventAgentKeyRotated, a, h.host, "key "+k.thumbprint))
	writeJSON(w, http.StatusOK, map[string]string{"agent_id": a.ID, "status": a.DirectoryAgent(p.now()).Status})
	return nil
}

// rotateHostKey serves POST /host/rotate-key (protocol §5.9), for hosts
// with an inline key; a JWKS host rotates by publishing its new key.
func (p *Provider) rotateHostKey(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	h, err := p.verifyHost(ctx, r, hostKnownActive)
	if err != nil {
		return err
	}
	if err := p.limits.host(ctx, h.host.ID); err != nil {
		return err
	}
	if h.host.JWKSURL != "" {
		return badRequest("a JWKS host rotates its key by publishing the new key at its JWKS URL")
	}
	m, err := readObject(r)
	if err != nil {
		return err
	}
	raw, ok := m["public_key"]
	if !ok {
		return badRequest("public_key is required")
	}
	k, err := parseJWK(raw)
	if err != nil {
		if errors.Is(err, errUnsupportedKey) {
			return agentcap.NewError(agentcap.CodeUnsupportedAlgorithm, "public_key: "+err.Error())
		}
		return badRequest("public_key: " + err.Error())
	}
	if err := p.store.RotateHostKey(ctx, h.host.ID, h.tok.iss, k.jwk, k.thumbprint); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return agentcap.NewError(agentcap.CodeKeyInUse, "the key was rotated concurrently or belongs to another host")
		}
		return internalError(err)
	}
	p.record(ctx, agentRecord(audit.EventHostKeyRotated, nil, h.host, "key "+k.thumbprint))
	writeJSON(w, http.StatusOK, map[string]string{"host_id": h.host.ID, "status": h.host.Status})
	return nil
}
