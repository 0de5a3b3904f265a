// Package agentauth makes a Go application a location where Agent Auth
// agents execute capabilities: it verifies agent JWTs, resolves the agent,
// its host and its grants, and maps every failure to the protocol's error
// codes as a *agentcap.Error.
//
// # Sessions
//
// A SessionSource turns the bearer token of a request into a Session. Two
// are provided:
//
//   - Verifier checks the token locally against a Directory: the JWS
//     syntax and header (typ agent+jwt, alg EdDSA, nothing else trusted
//     from the token), the signature with the agent's inline Ed25519 key
//     or its JWKS key, the agent's and host's states, iss, aud, iat, exp
//     and jti, in the order documented on Verifier.Session. Token ids are
//     recorded in a ReplayCache: MemoryReplayCache for one process,
//     package redisstore for several. Both are OwnerReplayCaches, charged
//     to the token's agent and host, so that no agent or host can fill
//     the cache the others rely on. A location without a provider in
//     front limits each agent's and host's requests with
//     VerifierConfig.Limiter, counted before the jti is recorded.
//   - IntrospectionSource asks the provider's introspection endpoint. Its
//     sessions are usually Compact: the provider's answer carries no
//     grant constraints, so capabilities that need them must be refused.
//
// Whether a session may run a given capability (the token's capabilities
// claim, active grants, constraints) is decided by AuthorizeCall.
//
// # Serving capabilities
//
// New returns the auth.Verifier of a capability location, which every
// transport takes (httpx.Config.Verifier, mcpx.Config.Verifier); the
// package itself imports no transport. It reads
// "Authorization: Bearer <agent JWT>", has Config.Sessions verify it and
// returns the agent's auth.Identity: Subject and AgentID the agent's id,
// HostID its host's, UserID the user the agent acts for (ActsFor: its own
// user, else its host's, none for an autonomous agent) and Claims the
// *Session (SessionOf). Every refusal is a *agentcap.Error in the
// protocol's codes, and the verifier's challenge (auth.Challenger), sent
// with every 401, points agents at the issuer's discovery document.
//
// The identity's Authorizer decides each call: Config.Authorize first,
// for the application's own refusals, then AuthorizeCall with the
// capability's required constraints and units (a grant that bounds an
// amount must constrain its unit, core.WithUnit), the raw arguments and
// the decoded input. It reports grant_status for listings, and rechecks the agent and
// its host for long streams when the SessionSource can
// (SessionRechecker). Config.AllowAnonymousDiscovery lets list and
// describe run without a token, as the nil identity. DiscoveryHandler and
// NewDiscoveryEndpoint serve the discovery document at
// agentcap.DiscoveryPath.
//
// With Config.Hosts set (a HostVerifier over the Directory, or a
// provider's own), list and describe also take host JWTs (protocol §5.2).
// The identity is then the host's: Subject "host:" and its id, HostID,
// UserID its linked user (none while it is pending) and Claims the *Host
// (HostOf). It sees what that user may see, gets no grant_status, and its
// Authorizer refuses every call: a host never runs a capability.
//
// # Directories
//
// MemoryDirectory holds hosts and agents in memory, validated on the way
// in; ParseDirectory and LoadDirectoryFile fill one from a JSON fixture
// with the protocol's field names. Any other store implements Directory.
//
// # Fetching keys
//
// Agents keyed by a JWKS URL are verified through go-oidc remote key sets
// (cached per URL), fetched with NewSafeHTTPClient under a FetchPolicy:
// https only, every resolved address vetted against private, loopback,
// link-local and other internal ranges before the connection is made to
// that same address, bounded redirects, sizes, key counts and time. The
// cache is bounded in bytes (FetchPolicy.CacheBytes), keeps a set for its
// Cache-Control max age (ten seconds to an hour, five minutes without
// one), fetches a URL at most once per ten seconds and one that failed
// at most once a minute, and never fetches for an agent or host that may
// not act.
package agentauth
