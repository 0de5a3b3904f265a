// Package agentauth makes a Go application a location where Agent Auth
// agents execute capabilities: it verifies agent JWTs, resolves the agent,
// its host and its grants, and maps every failure to the protocol's error
// codes as a *core.AppError.
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
//     package redisreplay for several.
//   - IntrospectionSource asks the provider's introspection endpoint. Its
//     sessions are usually Compact: the provider's answer carries no
//     grant constraints, so capabilities that need them must be refused.
//
// Whether a session may run a given capability (the token's capabilities
// claim, active grants, constraints) is decided by AuthorizeCall.
//
// # Serving capabilities
//
// HTTPConfig wires a SessionSource into an httpx handler: the bearer
// token becomes a Caller (the session and the application's principal),
// every execute and batch item goes through AuthorizeCall with the
// capability's required constraints and units (a grant that bounds an
// amount must constrain its unit, core.WithUnit), and listings carry
// grant_status.
// DiscoveryHandler serves the discovery document at DiscoveryPath.
//
// With HTTPOptions.Hosts set (a HostVerifier over the Directory, or a
// provider's own), list and describe also take host JWTs (protocol §5.2):
// the Caller then carries the verified Host instead of a Session, sees
// what HostPrincipal's principal may see, gets no grant_status, and never
// executes.
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
