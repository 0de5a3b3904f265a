// Package store keeps the state of an Agent Auth provider: hosts, agents,
// capability grants and approval requests, with the protocol's lifetime
// clocks. One Store backs both sides of an application: the provider
// endpoints write through it, and the resource server reads it as the
// agentauth.Directory that agent JWTs are verified against.
//
// # Implementations
//
// NewMemory (this package) holds everything in memory. Package sqlstore
// (DB.Provider) keeps it in SQLite, the embedded default, or in
// PostgreSQL for applications that run on several machines, next to the
// other stores of agentcap. All pass the same conformance suite, package
// storetest.
//
// # Races
//
// Every method is atomic, and the ones that decide something are
// compare-and-set: UpdateAgentStatus(ctx, id, from, to) succeeds only if
// the agent is still in one of from, so two users approving the same
// agent, or an approval racing a revocation, have exactly one winner; the
// others get a *StatusError naming the status they lost to. Registering an
// agent whose id, or whose key under the same host, is already taken is
// ErrConflict: the protocol keys registration retries by host and agent
// key, not by the display name, which the published client fills with the
// same default for every agent of a host. Grant writes for one agent are
// serialized, so concurrent approvals of different capabilities are all
// kept.
//
// # Lifetimes
//
// A Policy holds the three clocks of protocol §2.4 and the pending
// cleanup threshold of §10.9. TouchAgent, called for authenticated
// requests (by package provider at most once per
// provider.Config.TouchInterval while the agent has not lapsed), extends
// an agent's session or expires it; Sweep, called
// periodically, expires idle and long-lived agents, revokes agents past
// their absolute lifetime (they can never be reactivated) and deletes
// stale pending agents, pending hosts and expired approval requests. The
// directory view reports an active agent past its stored deadline as
// expired, so the deadline holds between two sweeps.
//
// # Token replay
//
// Host and agent JWT ids are not kept here. They only matter for a token's
// lifetime plus clock skew (protocol §10.3), so they belong in an
// agentauth.ReplayCache: in memory for one process, or shared through
// Redis (package redisstore).
package store
