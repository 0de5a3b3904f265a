// Package auth is the one seam between the kit's transports and the
// systems that tell who is calling. A [Verifier] turns the credentials of
// a request into an [Identity]; the identity carries the [Authorizer]
// that decides which capabilities it may run, with which arguments.
// Every transport (httpx and its router mounts, mcpx, the test kits)
// takes one Verifier; the executor hands the Identity to the
// application's context resolver, the visibility rules, hooks and the
// audit trail.
//
// Package agentauth implements Verifier for Agent Auth agent JWTs (and
// its provider for the provider's own records); package auth/oidcauth for
// OpenID Connect ID tokens. An application may write its own: a Verifier
// is one method.
//
// The security boundary is the Verifier: everything an Identity says was
// verified. An application's context resolver still re-reads roles and
// memberships from its own records rather than trusting what a token
// claims.
package auth

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/agentcap/agentcap"
)

// Identity is a verified caller. A nil *Identity is the anonymous caller,
// which may only list and describe capabilities, and only where the
// Verifier admits it.
type Identity struct {
	// Subject names the caller across requests: jobs, idempotency keys,
	// MCP sessions and confirmation tokens belong to it, so that only the
	// same caller may use them. It is never empty, and must not be shared
	// by two callers among all the verifiers an endpoint accepts (an
	// Agent Auth agent is its agent id).
	Subject string
	// AgentID, HostID and UserID name the agent, its host and the user the
	// caller acts for, as far as the verifier knows them ("" otherwise).
	// The audit trail records them. UserID is empty for an agent that acts
	// for nobody (an autonomous Agent Auth agent).
	AgentID, HostID, UserID string
	// Claims is the verifier's own record of the caller, for applications
	// that need more than the names above: an *agentauth.Session for an
	// Agent Auth agent, the verified token of an OpenID Connect caller.
	Claims any
	// Authorizer decides what the caller may run. Nil allows every
	// capability the caller can see.
	Authorizer Authorizer
	// ScopeChallenge reports a caller whose credentials are an OAuth
	// access token whose scopes are its grants: a transport that serves
	// such callers over HTTP lists only the capabilities granted, and
	// refuses a call of one not granted with 403 and a Bearer
	// insufficient_scope challenge naming it (RFC 6750 §3.1), so that the
	// client can ask the user for more.
	ScopeChallenge bool
}

// Authorizer decides, for one verified caller, which capabilities it may
// run and with which arguments: an Agent Auth agent's grants and their
// constraints, say. It must be safe for concurrent use (the items of a
// batch are authorized concurrently).
type Authorizer interface {
	// Authorize decides one call, after its arguments were validated and
	// before the application context is built. A refusal is an
	// *agentcap.Error (capability_not_granted, constraint_violated, ...);
	// any other error refuses the call as unauthorized, its cause hidden.
	Authorize(ctx context.Context, call *Call) error
	// GrantStatus reports, for listings, whether the caller may run the
	// capability ("granted" or "not_granted"); "" adds nothing.
	GrantStatus(capability string) string
	// Recheck reports whether the caller may still act, for long streams
	// that outlive the request's credentials: nil while it may, the
	// refusal a new request would get otherwise.
	Recheck(ctx context.Context) error
}

// JobAuthorizer is implemented by an Authorizer whose caller's
// credentials are bound to a location, as an Agent Auth agent JWT is to
// its aud. A job's status URL is a resource of the location that ran the
// job: before a transport answers a poll of the caller's own job of
// capability, or cancels it, it asks AuthorizeJob, which refuses a
// credential made for another location as an execution of capability
// with it would be refused. A refusal is an *agentcap.Error; any other
// error refuses as unauthorized.
type JobAuthorizer interface {
	AuthorizeJob(ctx context.Context, capability string) error
}

// Call is one call as an Authorizer sees it.
type Call struct {
	// Capability is the capability's name.
	Capability string
	// RequiredConstraints are the top-level input fields that a grant must
	// constrain, from the capability's definition.
	RequiredConstraints []string
	// Units maps a top-level input field to the field that gives its unit,
	// from the capability's definition (core.WithUnit): a grant that
	// bounds the first must constrain the second too, since a bound on an
	// amount means nothing without its unit.
	Units map[string]string
	// Arguments are the top-level members of the arguments as the caller
	// sent them, before decoding; nil for an in-process call. They are
	// slices of the request body, whose memory is reused once the answer
	// is written: copy what must outlive the call.
	Arguments map[string]json.RawMessage
	// Input is the decoded, validated input: the value the capability
	// will get.
	Input any
	// Normalized returns the JSON encoding of a top-level field of Input,
	// and false when Input has no such field, so that an authorizer sees
	// when decoding changed a constrained value (a type whose
	// UnmarshalJSON folds case, say). Nil means Arguments reach the
	// capability unchanged.
	Normalized func(field string) (json.RawMessage, bool)
}

// Verifier verifies the credentials of one request. It must be safe for
// concurrent use.
type Verifier interface {
	// Verify returns the verified caller of req. It refuses with an
	// *agentcap.Error: authentication_required for a request without
	// credentials (ErrNoCredentials), invalid_jwt for credentials that do
	// not verify, or its own (agent_revoked, rate_limited,
	// temporarily_unavailable, ...); any other error is answered as a
	// redacted internal_error. It returns a nil Identity and a nil error
	// only for a discovery request (req.Discovery) without credentials
	// from a verifier that admits anonymous callers there.
	Verify(ctx context.Context, req *Request) (*Identity, error)
}

// VerifierFunc adapts a function to Verifier.
type VerifierFunc func(ctx context.Context, req *Request) (*Identity, error)

// Verify calls f.
func (f VerifierFunc) Verify(ctx context.Context, req *Request) (*Identity, error) {
	return f(ctx, req)
}

// Challenger is implemented by verifiers that name an authentication
// scheme of their own: a transport sends Challenge as a WWW-Authenticate
// value with every 401 answer.
type Challenger interface {
	Challenge() string
}

// ChallengeOf returns v's challenge, or "" when v names none.
func ChallengeOf(v Verifier) string {
	if c, ok := v.(Challenger); ok {
		return c.Challenge()
	}
	return ""
}

// Request is what a transport tells a Verifier of one request.
type Request struct {
	// Authorization is the request's Authorization header, "" without one.
	Authorization string
	// Discovery reports a request that only lists or describes
	// capabilities. A verifier may admit credentials there that can never
	// execute (an Agent Auth host JWT), or no credentials at all.
	Discovery bool
	// RemoteAddr is the caller's network address ("host:port") as the
	// transport saw it, for per-address limits.
	RemoteAddr string
	// Header returns any other header of the request; nil when the
	// transport offers none.
	Header func(name string) string
}

// ErrNoCredentials is the refusal of a request without credentials: 401
// authentication_required. Verifiers return it (or wrap it) so that every
// transport answers it alike, with the verifier's challenge.
var ErrNoCredentials = agentcap.NewError(agentcap.CodeAuthenticationRequired, "authentication is required")

// BearerToken returns the token of an Authorization header value of the
// Bearer scheme (compared without regard to case, RFC 9110). ok is false
// when the header carries no Bearer credentials at all: as RFC 6750
// advises, a client that used another scheme is told that authentication
// is required rather than that its token is bad. A Bearer value that does
// not hold exactly one token is reported with ok true and an empty token:
// a bad credential, not a missing one.
func BearerToken(authorization string) (token string, ok bool) {
	h := strings.Trim(authorization, " \t")
	const scheme = "bearer"
	if len(h) < len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		return "", false
	}
	rest := h[len(scheme):]
	// The scheme ends at a space (RFC 9110: 1*SP before the credentials).
	if rest != "" && rest[0] != ' ' {
		return "", false
	}
	token = strings.Trim(rest, " \t")
	if strings.ContainsAny(token, " \t") {
		return "", true
	}
	return token, true
}

type identityKey struct{}

// NewContext returns a copy of ctx carrying id.
func NewContext(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// FromContext returns the identity ctx carries, or nil: Require puts the
// caller's there for the handler it protects.
func FromContext(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}

// Require returns middleware that lets a request through only with
// credentials v verifies, with the caller's Identity in the request's
// context (FromContext). A refusal is answered with the kit's error
// envelope (agentcap.WriteError) and v's challenge on 401. An anonymous
// caller is refused too: Require serves routes that act, not listings.
func Require(v Verifier) func(http.Handler) http.Handler {
	challenge := ChallengeOf(v)
	var challenges []string
	if challenge != "" {
		challenges = []string{challenge}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, err := v.Verify(r.Context(), &Request{
				Authorization: r.Header.Get("Authorization"),
				RemoteAddr:    r.RemoteAddr,
				Header:        r.Header.Get,
			})
			if err == nil && id == nil {
				err = ErrNoCredentials
			}
			if err != nil {
				_ = agentcap.WriteError(w, err, challenges...)
				return
			}
			next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), id)))
		})
	}
}
