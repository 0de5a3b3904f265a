// Package provider makes a Go application an Agent Auth provider: it
// serves discovery, agent registration with host JWTs, status, capability
// requests, approval (RFC 8628 style device authorization with a
// server-rendered approval page), revocation with its cascade,
// reactivation, agent and host key rotation, and introspection, over an
// agentauth/store Store, with the request limits of protocol §8.13.
//
// # Wiring
//
// A Provider is built once from a Config. It is an http.Handler for its
// endpoints, and the auth.Verifier of the capability locations served
// with its agents (httpx.Config.Verifier, and, for an MCP endpoint among
// Config.Endpoints, EndpointVerifier). Handler returns the whole site:
// discovery at the origin's well-known path, the endpoints under the
// issuer, the approval page, and the application's capability location:
//
//	prov, err := provider.New(provider.Config{
//		Issuer: "https://bank.example", ProviderName: "bank",
//		Store: st, Registry: reg, SignedInUser: signedIn,
//	})
//	loc, err := httpx.New(exec, httpx.Config{Verifier: prov})
//	http.ListenAndServe(addr, prov.Handler(loc))
//
// # Host JWTs
//
// Host-authenticated endpoints verify host JWTs as protocol §4.5.1 says,
// in the order documented on the unexported verifier and mirrored from
// agentauth.Verifier: syntax and header (typ host+jwt, alg EdDSA), claim
// types, aud equal to the issuer, the host by iss (its key's RFC 7638
// thumbprint) or its JWKS URL, for a new host iss equal to the presented
// key's thumbprint, the signature, iat within the skew, exp not passed (no skew), and jti
// replay. Pending hosts may register, poll status and revoke; revoked and
// rejected hosts nothing. The keys of JWKS hosts come from the remote key
// sets of the provider's agentauth.Verifier, so agent and host keys share
// one cache, refresh floor and memory bound; the host_jwks_url of a new
// host is fetched within a per-address and per-URL budget
// (RateLimits.KeyFetchPerIP, KeyFetchPerURL).
//
// # Approval
//
// Registration of a delegated agent, and capability requests beyond what
// Policy allows, wait for a user. The answer carries an approval object
// with verification_uri, user_code, expires_in and interval; the agent
// polls status, and while the agent is pending a poll sooner than half
// the interval is 400 slow_down (the status of an active agent is a
// plain read, limited only by the rate limits). The user decides on the approval page (or through Decide):
// all capabilities, a subset, or none. Capabilities of approval strength
// webauthn need a second confirmation step. Approving a registration
// activates the host and links it to the user; later agents of that host
// get its default capabilities without asking (Policy.AutoApprove).
//
// # Approval methods
//
// Device authorization is always offered. With Config.Notifier set, CIBA
// is offered too (protocol §7.2): Policy.ApprovalMethod picks the method
// of each request from the client's preferred_method and what the
// provider knows (§7.5; by default, CIBA when preferred and
// there is a user or login hint to address). A CIBA request is addressed
// to the host's user, or to the user Config.ResolveLoginHint finds; the
// client gets {method: "ciba", binding_message, expires_in, interval},
// the binding message ending with the request's code; the Notifier is
// called in the background; the user decides on the approval page
// (?request=id, also linked from "Your agents") after a fresh sign-in.
// Hosts and users have CIBA budgets (RateLimits.CIBAPerHost,
// NotifyPerUser), and a login hint naming nobody is answered like any
// other (CIBA Core §14).
//
// # A person's confirmation of one call
//
// With Config.Confirmer set (the Confirmer of the executor serving the
// Registry), HumanConfirmer returns the provider as that executor's
// core.HumanConfirmer: a call that a capability's WithHumanConfirmation
// rule picks becomes an approval request of kind "confirmation" for the
// agent's user, who sees the agent, the capability and the preview on
// the approval page and confirms (with the webauthn step, for such
// capabilities) or refuses. The agent polls PathConfirmation with a
// fresh agent JWT and gets, once, the token that confirms the call (see
// docs/confirmation.md).
//
// # Grants and claiming
//
// Policy.GrantAutonomous decides what autonomous agents get without a
// user; Policy.GrantTTL how long a grant lasts from its approval
// (reported as expires_at, enforced at execution). When a host becomes
// linked to a user, its autonomous agents are claimed (§2.10): status
// claimed, grants revoked, history the user's, and Config.OnClaim told.
//
// No grant is made that could never be used: one must constrain every
// field its capability requires (core.WithRequiredConstraints) and the
// unit of every amount it bounds (core.WithUnit: "at most 500" with its
// currency). The approval page asks the user for what a request leaves
// out, and shows each bound with its unit ("at most 500 USD"); Decide,
// GrantCapabilities and the user API refuse without it.
//
// # The signed-in user's pages and API
//
// With Config.SignedInUser set, the Handler serves, besides the approval
// page, the "Your agents" page ({issuer}/agents: requests waiting for the
// user, their agents with grants and constraints, their hosts; revoke an
// agent, a grant or a host) and the user API ({issuer}/user/..., see
// UserAPI), which work through the same operations (UserAgents,
// GrantCapabilities, RevokeGrant, UserHosts, UserApprovals, Decide).
// With an audit store (Config.Audit or Config.Activity) it also serves
// the "Activity" page ({issuer}/activity: the user's audit records,
// newest first, a page at a time) and GET {issuer}/user/activity
// (UserActivity). The pages share one layout, security headers and CSRF
// protection; layout.go says how to add one.
//
// # Audit trail
//
// Config.Audit receives a record of every registration, approval
// decision, grant change, reactivation, revocation, key rotation and
// claim; docs/audit.md lists them.
//
// # Capability listing with host JWTs
//
// The provider's verification (Verify) accepts host JWTs on list and
// describe, so that a host lists and describes capabilities before it has
// an agent (§5.2, §5.2.1), seeing those of its linked user: the identity
// is the host's (agentauth.HostOf), its UserID the host's linked user.
//
// # Several instances
//
// Instances of one provider behind a load balancer share its Store,
// Replay cache, RateLimits.Limiter and PageSecret (and the keys of the
// application's sign-in). Every agent JWT is checked against the
// store's current records, so an agent or host revoked, or a grant
// changed, through one instance is seen by every instance from its next
// request (an open event stream notices within httpx's
// RecheckInterval). A store may keep the records it reads in memory
// only while it can tell that no instance has written since: package
// sqlstore does so on PostgreSQL when it is given a count of changes
// that every instance moves after each write (sqlstore's DB.SetChanges,
// with redisstore's Changes), and reads the database on every request
// otherwise. A session check then serves the records an instance keeps
// at once and has the count compared with the value they were read at
// when the token's id is recorded (in the same Redis script, with
// redisstore's replay cache of the same Store; by one read of the count
// otherwise): if it moved, no id is recorded and the token is verified
// again from fresh records. The example bank's multi-instance harness
// checks this with three instances (RELIABILITY.md).
//
// # Differences from the reference provider
//
// They are listed, with their reasons, in interop/README.md.
package provider
