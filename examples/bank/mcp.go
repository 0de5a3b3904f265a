package main

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/examples/bank/bank"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/mcpx"
)

// mcpPath is where the bank serves MCP, relative to the issuer.
const mcpPath = "/mcp"

// mcpResource is the URL of the bank's MCP endpoint: the aud its agent
// JWTs must have, and nothing else.
func mcpResource(issuer string) string { return issuer + mcpPath }

// newMCP serves the bank's capabilities over MCP, for Agent Auth agents
// whose JWTs hc verifies (a fresh one per HTTP request).
func newMCP(exec *bank.Executor, issuer string, hc httpx.Config[bank.Caller]) (*mcpx.Server[*bank.App, bank.Caller], error) {
	cfg := mcpx.AgentAuth(hc)
	cfg.Name = "bank"
	cfg.Version = "1.0.0"
	cfg.Resource = mcpResource(issuer)
	cfg.ResourceName = "Example bank"
	cfg.Instructions = "The bank's accounts, balances, transfers and exchange rates. Authenticate each request with a fresh Agent Auth agent JWT whose aud is " + cfg.Resource + "."
	return mcpx.New(exec, cfg)
}

// mountMCP registers the MCP endpoint under the issuer's path and its
// protected resource metadata at the origin's root.
func mountMCP(mux *http.ServeMux, issuer string, s *mcpx.Server[*bank.App, bank.Caller]) {
	u, _ := url.Parse(issuer) // checked by parseFlags
	s.Handle(mux, strings.TrimRight(u.Path, "/")+mcpPath)
}

// directoryConfig is the bank's Agent Auth wiring for a location whose
// agent JWTs sessions verifies, and whose host JWTs (on list and
// describe) hosts verifies when not nil.
func directoryConfig(sessions agentauth.SessionSource, hosts agentauth.HostSource, issuer string, debug *slog.Logger) (httpx.Config[bank.Caller], error) {
	opts := bank.HTTPOptions()
	opts.Sessions = sessions
	opts.Hosts = hosts
	opts.Issuer = issuer
	opts.Logger = debug
	return agentauth.HTTPConfig(opts)
}

// directoryMCP is the MCP endpoint of a bank that trusts a directory: the
// same agents, verified by a verifier of its own whose only audience is
// the endpoint.
func directoryMCP(dir agentauth.Directory, exec *bank.Executor, cfg config, debug *slog.Logger) (*mcpx.Server[*bank.App, bank.Caller], error) {
	verifier, err := agentauth.NewVerifier(agentauth.VerifierConfig{
		Directory: dir,
		Audiences: []string{mcpResource(cfg.issuer)},
		KeyFetch:  agentauth.FetchPolicy{AllowLoopback: cfg.allowLoopbackJWKS},
	})
	if err != nil {
		return nil, err
	}
	hc, err := directoryConfig(verifier, nil, cfg.issuer, debug)
	if err != nil {
		return nil, err
	}
	return newMCP(exec, cfg.issuer, hc)
}
