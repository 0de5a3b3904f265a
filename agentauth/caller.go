package agentauth

// ForExecution returns a copy of c that reports Executing. HTTPConfig's
// authenticator knows from the route whether a request executes; a
// transport that authenticates a request before it knows what the request
// will do (MCP's Streamable HTTP carries tools/list and tools/call to one
// endpoint) marks the caller once it runs a capability, so that
// visibility predicates see it as httpx's execute route would.
func (c Caller[P]) ForExecution() Caller[P] {
	c.executing = true
	return c
}

// SessionOwner names who c is across requests: "agent:" and the agent's
// id, or "" for the anonymous caller. A transport that keeps sessions
// across requests (MCP's Streamable HTTP) binds each session to it, so
// that only the agent that opened a session may use it, whatever fresh
// token each request carries.
func (c Caller[P]) SessionOwner() string {
	if c.Session == nil || c.Session.Agent == nil {
		return ""
	}
	return "agent:" + c.Session.Agent.ID
}
