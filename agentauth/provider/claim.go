package provider

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
)

// Claim tells an application that autonomous agents were claimed
// (protocol §2.10): their host became linked to a user, so the agents
// are now terminal (status claimed), their grants revoked, and their
// history the user's. Resources the agents created or own should move to
// the user; Config.OnClaim is where the application does that.
type Claim struct {
	// UserID is the user the host was linked to.
	UserID string
	// HostID is the host.
	HostID string
	// AgentIDs are the claimed agents, sorted.
	AgentIDs []string
}

// claimedBy records the closing of a claimed agent's pending approvals.
const claimedBy = store.ClaimedBy

// linkHost links host to userID, which claims the host's autonomous
// agents (the store does that in the same transaction), closes their
// pending approval requests and tells the application.
func (p *Provider) linkHost(ctx context.Context, hostID, userID string) error {
	claimed, err := p.store.LinkHostUser(ctx, hostID, userID)
	if err != nil {
		return err
	}
	if len(claimed) == 0 {
		return nil
	}
	now := p.now()
	for _, id := range claimed {
		aps, err := p.store.ListApprovals(ctx, id)
		if err != nil {
			return err
		}
		for _, ap := range aps {
			if ap.Status != store.ApprovalPending {
				continue
			}
			if err := p.store.DecideApproval(ctx, ap.ID, store.ApprovalDenied, claimedBy, now); err != nil && !errors.Is(err, store.ErrStatus) {
				return err
			}
		}
	}
	for _, id := range claimed {
		p.record(ctx, audit.Record{Event: audit.EventHostClaimed, UserID: userID, HostID: hostID, AgentID: id,
			Detail: "autonomous agent claimed with its host"})
	}
	p.logger.InfoContext(ctx, "agentauth/provider: autonomous agents claimed", "host", hostID, "user", userID, "agents", claimed)
	if p.onClaim != nil {
		p.runOnClaim(ctx, Claim{UserID: userID, HostID: hostID, AgentIDs: claimed})
	}
	return nil
}

// runOnClaim calls Config.OnClaim. The claim has happened whatever the
// hook does: its error, or its panic, is logged, never answered.
func (p *Provider) runOnClaim(ctx context.Context, c Claim) {
	defer func() {
		if r := recover(); r != nil {
			p.logger.ErrorContext(ctx, "agentauth/provider: OnClaim panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	if err := p.onClaim(ctx, c); err != nil {
		p.logger.ErrorContext(ctx, "agentauth/provider: OnClaim", "host", c.HostID, "user", c.UserID, "error", err.Error())
	}
}

// linkedHostAutonomous refuses an autonomous registration under a host
// linked to a user: such an agent would be claimed the moment it exists
// (§2.10), and a host that has a user registers delegated agents.
func linkedHostAutonomous() error {
	return agentcap.NewError(agentcap.CodeUnsupportedMode,
		"this host is linked to a user: it registers delegated agents; autonomous agents belong to hosts without a user").
		With("mode", agentcap.ModeAutonomous)
}
