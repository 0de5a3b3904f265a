package main

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/ratelimit"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/examples/bank/bank"
	"github.com/agentcap/agentcap/mcpx"
)

// mcpPath is where the bank serves MCP, relative to the issuer.
const mcpPath = "/mcp"

// mcpResource is the URL of the bank's MCP endpoint: the aud its agent
// JWTs must have, and nothing else.
func mcpResource(issuer string) string { return issuer + mcpPath }

// newMCP serves the bank's capabilities over MCP, for Agent Auth agents
// whose JWTs verifier verifies (a fresh one per HTTP request).
// With oauth, the bank's provider is the endpoint's OAuth authorization
// server, and the capabilities are its scopes.
func newMCP(exec *core.Executor, issuer string, verifier auth.Verifier, oauth bool, debug *slog.Logger) (*mcpx.Server, error) {
	resource := mcpResource(issuer)
	cfg := mcpx.Config{
		Name:         "bank",
		Version:      "1.0.0",
		Instructions: "The bank's accounts, balances, transfers and exchange rates. Authenticate each request with a fresh Agent Auth agent JWT whose aud is " + resource + ".",
		Verifier:     verifier,
		Resource:     resource,
		ResourceName: "Example bank",
		Logger:       debug,
	}
	if oauth {
		cfg.Instructions = "The bank's accounts, balances, transfers and exchange rates. Connect with OAuth (the bank is the authorization server) or with a fresh Agent Auth agent JWT per request whose aud is " + resource + "."
		cfg.AuthorizationServers = []string{issuer}
		for _, d := range exec.Registry().All() {
			cfg.ScopesSupported = append(cfg.ScopesSupported, d.Name())
		}
	}
	return mcpx.New(exec, cfg)
}

// mountMCP registers the MCP endpoint under the issuer's path and its
// protected resource metadata at the origin's root.
func mountMCP(mux *http.ServeMux, issuer string, s *mcpx.Server) {
	u, _ := url.Parse(issuer) // checked by parseFlags
	s.Handle(mux, strings.TrimRight(u.Path, "/")+mcpPath)
}

// directoryVerifier is the bank's Agent Auth verifier for a location
// whose agent JWTs sessions verifies, and whose host JWTs (on list and
// describe) hosts verifies when not nil: capabilities that act for a
// user refuse agents without one before their grants are looked at
// (bank.Authorize), and the public ones are listed to anyone.
func directoryVerifier(sessions agentauth.SessionSource, hosts agentauth.HostSource, issuer string, debug *slog.Logger) (auth.Verifier, error) {
	return agentauth.New(agentauth.Config{
		Sessions:                sessions,
		Hosts:                   hosts,
		Issuer:                  issuer,
		AllowAnonymousDiscovery: true,
		Authorize:               bank.Authorize,
		Logger:                  debug,
	})
}

// directoryLimiter is the limiter of a bank that trusts a directory:
// nil with -limits off.
func directoryLimiter(cfg config) ratelimit.Limiter {
	if cfg.limits.off {
		return nil
	}
	return ratelimit.NewMemory(0)
}

// limitVerifier has vc count each agent's and each host's requests in
// limiter, at -limits' agent= and host= (zero: the verifier's defaults,
// 120 and 600 a minute). A nil limiter limits nothing.
func limitVerifier(vc *agentauth.VerifierConfig, limiter ratelimit.Limiter, cfg config) {
	if limiter == nil {
		return
	}
	vc.Limiter = limiter
	vc.PerAgent, vc.PerHost = cfg.limits.agent, cfg.limits.host
}

// directoryMCP is the MCP endpoint of a bank that trusts a directory: the
// same agents, verified by a verifier of its own whose only audience is
// the endpoint, its agents limited with those of execute by limiter.
func directoryMCP(dir agentauth.Directory, exec *core.Executor, cfg config, limiter ratelimit.Limiter, debug *slog.Logger) (*mcpx.Server, error) {
	vc := agentauth.VerifierConfig{
		Directory: dir,
		Audiences: []string{mcpResource(cfg.issuer)},
		KeyFetch:  agentauth.FetchPolicy{AllowLoopback: cfg.allowLoopbackJWKS},
	}
	limitVerifier(&vc, limiter, cfg)
	sessions, err := agentauth.NewVerifier(vc)
	if err != nil {
		return nil, err
	}
	verifier, err := directoryVerifier(sessions, nil, cfg.issuer, debug)
	if err != nil {
		return nil, err
	}
	return newMCP(exec, cfg.issuer, verifier, false, debug)
}
