package agentauth

import (
	"context"
	"errors"
	"fmt"
)

// SessionRechecker is a SessionSource that can tell whether a session it
// verified earlier may still act: whether its agent and host are still
// active. Long streams call it periodically (protocol §5.11: a stream
// that outlives its JWT must stop when the agent or host is revoked).
type SessionRechecker interface {
	Recheck(ctx context.Context, s *Session) error
}

var _ SessionRechecker = (*Verifier)(nil)

// Recheck re-reads the session's agent and host from the directory and
// returns the error a new token of theirs would get for their state
// (403 agent_revoked, host_revoked, agent_expired, ...), or nil while
// both are active. An agent or host that is gone from the directory is
// refused like an unknown token.
func (v *Verifier) Recheck(ctx context.Context, s *Session) error {
	if s == nil || s.Agent == nil {
		return invalidToken(errors.New("agentauth: recheck of an empty session"))
	}
	agent, err := v.dir.Agent(ctx, s.Agent.ID)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return invalidToken(fmt.Errorf("agentauth: agent %q: %w", s.Agent.ID, err))
		}
		return internal(fmt.Errorf("agentauth: directory: agent %q: %w", s.Agent.ID, err))
	}
	if err := agentStatusError(agent); err != nil {
		return err
	}
	host, err := v.dir.Host(ctx, agent.HostID)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return invalidToken(fmt.Errorf("agentauth: host %q: %w", agent.HostID, err))
		}
		return internal(fmt.Errorf("agentauth: directory: host %q: %w", agent.HostID, err))
	}
	return hostStatusError(host)
}
