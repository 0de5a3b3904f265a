package provider

import (
	"fmt"
	"net/url"
	"slices"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

// EndpointConfig returns the httpx configuration of an endpoint that
// serves the Registry's capabilities by another transport at endpoint, one
// of Config.Endpoints (an MCP endpoint, with mcpx.AgentAuth): HTTPConfig,
// except that every execution's agent JWT must name endpoint as its aud,
// whatever the capability's location, so that a token made for the
// capability locations is refused there, and the reverse.
func EndpointConfig[P any](p *Provider, endpoint string, o agentauth.HTTPOptions[P]) (httpx.Config[agentauth.Caller[P]], error) {
	if !slices.Contains(p.endpoints, endpoint) {
		return httpx.Config[agentauth.Caller[P]]{}, fmt.Errorf("provider: endpoint %q is not among Config.Endpoints", endpoint)
	}
	return locationConfig(p, o, func(*core.Definition) string { return endpoint })
}

func checkEndpoint(e string) error {
	u, err := url.Parse(e)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("provider: Config.Endpoints: %q is not an absolute http(s) URL without credentials or fragment", e)
	}
	return nil
}
