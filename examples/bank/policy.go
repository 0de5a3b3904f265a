package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/examples/bank/bank"
)

// withBankPolicy adds the bank's provider policy to cfg:
//
//   - autonomous agents get the bank's public capabilities (approval
//     strength none, no user's data: exchange_rate) and nothing else
//     (bank.GrantAutonomous);
//   - a transfer_money grant lasts a day from its approval
//     (bank.GrantLifetimes);
//   - CIBA approvals (preferred_method "ciba"): the notifier logs one
//     line per request, and the request waits on the user's "Your
//     agents" page ({issuer}/agents) until they review it; login hints
//     name the development users ("alice", "user_alice" or
//     "alice@bank.example");
//   - claimed autonomous agents are logged (they own nothing to move).
func withBankPolicy(cfg provider.Config, logger *slog.Logger) provider.Config {
	cfg.Policy.GrantAutonomous = bank.GrantAutonomous
	cfg.Policy.GrantTTL = provider.GrantTTLs(bank.GrantLifetimes)
	cfg.Notifier = provider.NotifierFunc(func(ctx context.Context, n provider.Notification) error {
		// The agent's words are logged quoted, as data: they are
		// untrusted text (protocol §8.10).
		logger.InfoContext(ctx, "approval requested", slog.String("user", n.UserID),
			slog.String("agent", n.AgentName), slog.Any("capabilities", n.Capabilities),
			slog.String("message", n.BindingMessage), slog.String("review", n.ReviewURL))
		return nil
	})
	cfg.ResolveLoginHint = devUserHint
	cfg.OnClaim = func(ctx context.Context, c provider.Claim) error {
		logger.InfoContext(ctx, "autonomous agents claimed", slog.String("user", c.UserID),
			slog.String("host", c.HostID), slog.Any("agents", c.AgentIDs))
		return nil
	}
	return cfg
}

// devUserHint resolves a login hint to one of the development users.
func devUserHint(_ context.Context, hint string) (string, error) {
	name := strings.ToLower(strings.TrimSpace(hint))
	name = strings.TrimPrefix(name, "user_")
	name = strings.TrimSuffix(name, "@bank.example")
	switch name {
	case "alice", "bob":
		return "user_" + name, nil
	}
	return "", nil
}
