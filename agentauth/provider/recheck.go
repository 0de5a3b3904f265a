package provider

import (
	"context"

	"github.com/agentcap/agentcap/agentauth"
)

var _ agentauth.SessionRechecker = sessionSource{}

// Recheck tells an open stream whether its agent and host may still act,
// from the provider's store: a stream of an agent revoked (or expired)
// since it began ends at the next check.
func (s sessionSource) Recheck(ctx context.Context, sess *agentauth.Session) error {
	return s.p.verifier.Recheck(ctx, sess)
}
