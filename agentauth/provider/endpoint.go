package provider

import (
	"fmt"
	"net/url"
	"slices"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
)

// EndpointVerifier returns the auth.Verifier of an endpoint that serves
// the Registry's capabilities by another transport at endpoint, one of
// Config.Endpoints (an MCP endpoint, as mcpx.Config.Verifier): the
// provider's own verification (see Verify), except that every call's
// agent JWT must name endpoint as its aud, whatever the capability's
// location, so that a token made for the capability locations is refused
// there, and the reverse. When the authorization server is on
// (Config.OAuth), it accepts as well the access tokens issued for
// endpoint: the caller is the agent the user's consent made for the
// client, its grants decide every call, and its identity has
// ScopeChallenge set (see docs/oauth.md).
func (p *Provider) EndpointVerifier(endpoint string) (auth.Verifier, error) {
	if !slices.Contains(p.endpoints, endpoint) {
		return nil, fmt.Errorf("provider: endpoint %q is not among Config.Endpoints", endpoint)
	}
	return p.locationVerifier(endpointSessions{p: p, endpoint: endpoint}, func(*core.Definition) string { return endpoint })
}

func checkEndpoint(e string) error {
	u, err := url.Parse(e)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("provider: Config.Endpoints: %q is not an absolute http(s) URL without credentials or fragment", e)
	}
	return nil
}
