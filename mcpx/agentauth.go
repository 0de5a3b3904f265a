package mcpx

import (
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/httpx"
)

// AgentAuth returns the Config of an MCP endpoint for Agent Auth agents,
// from the httpx.Config that agentauth.HTTPConfig (or the provider's
// HTTPConfig) built for the same capabilities: the same authenticator
// (agent JWTs verified by the same session source, the jti of each
// recorded, so that a client signs a fresh JWT for every HTTP request),
// the same authorizer (grants, their constraints, the capability's
// required constraints), grant status in listings, the AgentAuth
// discovery challenge next to the Bearer one, and the body limit. Sessions
// belong to the agent (agentauth.Caller.SessionOwner).
//
// The session source decides which audiences it accepts: give the
// endpoint a verifier whose audience is the endpoint's own URL (the
// Resource set on the returned Config) and nothing else, so that a token
// made for another location is refused. Set Resource, and adjust any
// other field, before calling New.
func AgentAuth[P any](hc httpx.Config[agentauth.Caller[P]]) Config[agentauth.Caller[P]] {
	return Config[agentauth.Caller[P]]{
		Authenticate: hc.Authenticate,
		Authorize:    hc.Authorize,
		GrantStatus:  hc.GrantStatus,
		Challenge:    hc.Challenge,
		MaxBodyBytes: hc.MaxBodyBytes,
		Logger:       hc.Logger,
	}
}
